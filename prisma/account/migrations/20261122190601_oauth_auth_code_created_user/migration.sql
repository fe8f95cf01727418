-- AlterTable
ALTER TABLE "auth_codes" ADD COLUMN     "created_user" BOOLEAN NOT NULL DEFAULT false;
