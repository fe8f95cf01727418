-- CreateTable
CREATE TABLE "chat_messages" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "chat_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "name" TEXT,
    "content" TEXT,
    "tool_name" TEXT,
    "input" TEXT,
    "path" TEXT,
    "cut" BOOLEAN NOT NULL DEFAULT false,
    "run_id" TEXT,
    "created_at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "pending_messages" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "chat_id" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "created_at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "subagent_runs" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "label" TEXT NOT NULL,
    "task" TEXT NOT NULL,
    "persona" TEXT NOT NULL DEFAULT '',
    "status" TEXT NOT NULL,
    "chat_id" TEXT NOT NULL,
    "started_at" DATETIME NOT NULL,
    "completed_at" DATETIME,
    "result" TEXT,
    "error" TEXT
);

-- CreateTable
CREATE TABLE "contacts" (
    "telegram_id" TEXT NOT NULL PRIMARY KEY,
    "username" TEXT NOT NULL DEFAULT '',
    "display_name" TEXT NOT NULL DEFAULT '',
    "status" TEXT NOT NULL,
    "notified_at" DATETIME,
    "created_at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" DATETIME NOT NULL
);

-- CreateIndex
CREATE INDEX "chat_messages_chat_id_id_idx" ON "chat_messages"("chat_id", "id");

-- CreateIndex
CREATE INDEX "subagent_runs_status_started_at_idx" ON "subagent_runs"("status", "started_at");

-- CreateIndex
CREATE INDEX "contacts_status_idx" ON "contacts"("status");
