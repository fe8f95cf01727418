-- CreateTable
CREATE TABLE "model_usage" (
    "scope" TEXT NOT NULL,
    "day" TEXT NOT NULL,
    "tokens_in" BIGINT NOT NULL DEFAULT 0,
    "tokens_out" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "model_usage_pkey" PRIMARY KEY ("scope","day")
);
