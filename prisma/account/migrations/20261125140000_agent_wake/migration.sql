-- AlterTable
ALTER TABLE "agents" ADD COLUMN     "next_wake_at" TIMESTAMP(3),
ADD COLUMN     "wake_attempts" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "wake_lease_until" TIMESTAMP(3);

-- CreateIndex
CREATE INDEX "agents_next_wake_at_idx" ON "agents"("next_wake_at");
