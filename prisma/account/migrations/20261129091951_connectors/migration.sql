-- CreateTable
CREATE TABLE "connectors" (
    "id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "tools" JSONB NOT NULL DEFAULT '[]',
    "disabled_tools" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "auth_encrypted" TEXT,
    "last_error" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "connectors_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "connector_flows" (
    "id" UUID NOT NULL,
    "connector_id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "ticket_hash" TEXT NOT NULL,
    "state_hash" TEXT NOT NULL,
    "browser_hash" TEXT,
    "request_encrypted" TEXT NOT NULL,
    "expires_at" TIMESTAMP(3) NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "connector_flows_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "connectors_user_id_name_key" ON "connectors"("user_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "connector_flows_ticket_hash_key" ON "connector_flows"("ticket_hash");

-- CreateIndex
CREATE UNIQUE INDEX "connector_flows_state_hash_key" ON "connector_flows"("state_hash");

-- CreateIndex
CREATE INDEX "connector_flows_connector_id_idx" ON "connector_flows"("connector_id");

-- AddForeignKey
ALTER TABLE "connectors" ADD CONSTRAINT "connectors_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "connector_flows" ADD CONSTRAINT "connector_flows_connector_id_fkey" FOREIGN KEY ("connector_id") REFERENCES "connectors"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "connector_flows" ADD CONSTRAINT "connector_flows_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;
