-- AlterTable
ALTER TABLE "users" ADD COLUMN     "timezone" TEXT;
