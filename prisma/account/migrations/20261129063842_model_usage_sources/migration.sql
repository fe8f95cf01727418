-- AlterTable
ALTER TABLE "model_usage" ADD COLUMN     "tokens_chat" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN     "tokens_heartbeat" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN     "tokens_subagent" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN     "tokens_task" BIGINT NOT NULL DEFAULT 0;
