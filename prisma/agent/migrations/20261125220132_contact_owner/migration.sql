-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_contacts" (
    "telegram_id" TEXT NOT NULL PRIMARY KEY,
    "username" TEXT NOT NULL DEFAULT '',
    "display_name" TEXT NOT NULL DEFAULT '',
    "status" TEXT NOT NULL,
    "owner" BOOLEAN NOT NULL DEFAULT false,
    "notified_at" DATETIME,
    "created_at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" DATETIME NOT NULL
);
INSERT INTO "new_contacts" ("created_at", "display_name", "notified_at", "status", "telegram_id", "updated_at", "username") SELECT "created_at", "display_name", "notified_at", "status", "telegram_id", "updated_at", "username" FROM "contacts";
DROP TABLE "contacts";
ALTER TABLE "new_contacts" RENAME TO "contacts";
CREATE INDEX "contacts_status_idx" ON "contacts"("status");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
