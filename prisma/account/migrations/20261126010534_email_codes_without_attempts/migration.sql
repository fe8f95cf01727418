-- AlterTable
ALTER TABLE "email_codes" DROP COLUMN "attempts";
