-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "refresh_digest" TEXT;
