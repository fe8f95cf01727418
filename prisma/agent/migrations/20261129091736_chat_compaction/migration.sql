-- AlterTable
ALTER TABLE "chat_messages" ADD COLUMN "covers_to" INTEGER;
