-- Full-text search over the chat history (search_history, server/agent/chat/search.ts): an FTS5
-- index of user and assistant text, kept in sync with chat_messages by triggers. Prisma does not
-- model virtual tables or triggers: a later migration that redefines chat_messages (Prisma's
-- "RedefineTables") drops these triggers with the table and must create them again.

-- CreateVirtualTable
CREATE VIRTUAL TABLE "chat_messages_fts" USING fts5(
    content,
    content = 'chat_messages',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);

-- CreateTrigger
CREATE TRIGGER "chat_messages_fts_insert" AFTER INSERT ON "chat_messages"
WHEN new."type" = 'text' AND new."content" IS NOT NULL
BEGIN
    INSERT INTO "chat_messages_fts" (rowid, content) VALUES (new."id", new."content");
END;

-- CreateTrigger
CREATE TRIGGER "chat_messages_fts_delete" AFTER DELETE ON "chat_messages"
WHEN old."type" = 'text' AND old."content" IS NOT NULL
BEGIN
    INSERT INTO "chat_messages_fts" ("chat_messages_fts", rowid, content) VALUES ('delete', old."id", old."content");
END;

-- CreateTrigger
CREATE TRIGGER "chat_messages_fts_update" AFTER UPDATE OF "type", "content" ON "chat_messages"
BEGIN
    INSERT INTO "chat_messages_fts" ("chat_messages_fts", rowid, content)
        SELECT 'delete', old."id", old."content" WHERE old."type" = 'text' AND old."content" IS NOT NULL;
    INSERT INTO "chat_messages_fts" (rowid, content)
        SELECT new."id", new."content" WHERE new."type" = 'text' AND new."content" IS NOT NULL;
END;

-- The history written before this migration.
INSERT INTO "chat_messages_fts" (rowid, content) SELECT "id", "content" FROM "chat_messages" WHERE "type" = 'text' AND "content" IS NOT NULL;
