-- CreateTable
CREATE TABLE "owner_codes" (
    "code_sha256" TEXT NOT NULL PRIMARY KEY,
    "expires_at" DATETIME NOT NULL
);
