-- CreateTable
CREATE TABLE "chats" (
    "chat_id" TEXT NOT NULL PRIMARY KEY,
    "title" TEXT NOT NULL,
    "created_at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateIndex
CREATE INDEX "chats_updated_at_idx" ON "chats"("updated_at");


-- Chats that already have history join the list, titled by their first user message.
INSERT INTO "chats" ("chat_id", "title", "created_at", "updated_at")
SELECT m."chat_id",
       substr(trim(replace(replace(replace((SELECT f."content" FROM "chat_messages" f WHERE f."chat_id" = m."chat_id" AND f."type" = 'text' AND f."name" = 'user' ORDER BY f."id" LIMIT 1), char(13), ' '), char(10), ' '), char(9), ' ')), 1, 80),
       min(m."created_at"),
       max(m."created_at")
FROM "chat_messages" m
WHERE m."type" = 'text' AND m."name" = 'user'
GROUP BY m."chat_id";
