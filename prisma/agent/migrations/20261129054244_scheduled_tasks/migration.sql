-- CreateTable
CREATE TABLE "tasks" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "prompt" TEXT NOT NULL,
    "chat_id" TEXT NOT NULL,
    "at" TEXT,
    "cron" TEXT,
    "timezone" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "next_run_at" DATETIME,
    "last_run_at" DATETIME,
    "last_outcome" TEXT,
    "created_at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "agent_state" (
    "key" TEXT NOT NULL PRIMARY KEY,
    "value" TEXT NOT NULL
);

-- CreateIndex
CREATE INDEX "tasks_status_next_run_at_idx" ON "tasks"("status", "next_run_at");
