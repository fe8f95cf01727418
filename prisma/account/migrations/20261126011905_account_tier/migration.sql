-- CreateEnum
CREATE TYPE "account_tier" AS ENUM ('guest', 'unverified', 'full');

-- AlterTable: guests keep their tier, every other existing account stays full. Only accounts
-- created from now on start unverified (docs/security.md, "Accounts nothing vouches for").
ALTER TABLE "users" ADD COLUMN     "tier" "account_tier" NOT NULL DEFAULT 'full';
UPDATE "users" SET "tier" = 'guest' WHERE "is_guest";
ALTER TABLE "users" DROP COLUMN "is_guest";
