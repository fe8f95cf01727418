-- CreateTable
CREATE TABLE "messenger_bots" (
    "user_id" UUID NOT NULL,
    "token_encrypted" TEXT NOT NULL,
    "bot_username" TEXT NOT NULL,
    "bot_name" TEXT NOT NULL,
    "webhook_id" TEXT NOT NULL,
    "webhook_secret_encrypted" TEXT NOT NULL,
    "webhook" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "messenger_bots_pkey" PRIMARY KEY ("user_id")
);

-- CreateIndex
CREATE UNIQUE INDEX "messenger_bots_webhook_id_key" ON "messenger_bots"("webhook_id");

-- AddForeignKey
ALTER TABLE "messenger_bots" ADD CONSTRAINT "messenger_bots_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;
