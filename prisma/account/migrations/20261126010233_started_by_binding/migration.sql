-- AlterTable
ALTER TABLE "auth_codes" DROP COLUMN "created_user",
ADD COLUMN     "browser_hash" TEXT;

-- AlterTable
ALTER TABLE "email_codes" ADD COLUMN     "requested_by" UUID;

-- AlterTable
ALTER TABLE "wallet_nonces" ADD COLUMN     "requested_by" UUID;

-- CreateTable
CREATE TABLE "used_id_tokens" (
    "token_hash" TEXT NOT NULL,
    "expires_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "used_id_tokens_pkey" PRIMARY KEY ("token_hash")
);

-- CreateIndex
CREATE INDEX "used_id_tokens_expires_at_idx" ON "used_id_tokens"("expires_at");
