/**
 * The agents registry: where each agent listens, its secret (sealed), and the user it serves.
 * Each user has at most one agent.
 */
import { randomBytes } from 'node:crypto';
import { conflict, notFound } from '../../common/errors.js';
import { Prisma } from '../../generated/account/client.js';
import type { AccountDb } from '../store.js';
import { bannedAt } from '../users/bans.js';
import type { SecretBox } from './secrets.js';

export interface AgentEndpoint {
  id: string;
  name: string;
  url: string;
  secret: string;
  kind: string;
  userId: string | null;
}

export const newAgentSecret = () => randomBytes(32).toString('base64url');

export class AgentRegistry {
  constructor(
    private readonly db: AccountDb,
    private readonly box: SecretBox,
  ) {}

  private endpoint(row: { id: string; name: string; url: string; secretEncrypted: string; kind: string; userId: string | null }): AgentEndpoint {
    return { id: row.id, name: row.name, url: row.url, secret: this.box.open(row.secretEncrypted), kind: row.kind, userId: row.userId };
  }

  /** `id`: one chosen ahead (a warm-pool agent's, whose directory is named by it); otherwise the store makes one. */
  async add(input: { id?: string; name: string; url: string; secret: string; kind: string; userId?: string }): Promise<AgentEndpoint> {
    try {
      const row = await this.db.agent.create({
        data: {
          ...(input.id ? { id: input.id } : {}),
          name: input.name,
          url: input.url,
          secretEncrypted: this.box.seal(input.secret),
          kind: input.kind,
          userId: input.userId ?? null,
        },
      });
      return this.endpoint(row);
    } catch (error) {
      if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002')
        throw conflict(`An agent named ${input.name} (or for that user) already exists`, 'AGENT_EXISTS');
      throw error;
    }
  }

  async forUser(userId: string): Promise<AgentEndpoint | undefined> {
    const row = await this.db.agent.findUnique({ where: { userId } });
    return row ? this.endpoint(row) : undefined;
  }

  async byId(id: string): Promise<AgentEndpoint | undefined> {
    const row = await this.db.agent.findUnique({ where: { id } });
    return row ? this.endpoint(row) : undefined;
  }

  async byName(name: string): Promise<AgentEndpoint | undefined> {
    const row = await this.db.agent.findUnique({ where: { name } });
    return row ? this.endpoint(row) : undefined;
  }

  async exists(id: string): Promise<boolean> {
    return (await this.db.agent.count({ where: { id } })) > 0;
  }

  async list(): Promise<Array<Omit<AgentEndpoint, 'secret'>>> {
    const rows = await this.db.agent.findMany({ orderBy: { createdAt: 'asc' } });
    return rows.map(({ id, name, url, kind, userId }) => ({ id, name, url, kind, userId }));
  }

  async assign(name: string, userId: string | null): Promise<void> {
    const { count } = await this.db.agent.updateMany({ where: { name }, data: { userId } });
    if (count === 0) throw notFound(`No agent named ${name}`, 'AGENT_NOT_FOUND');
  }

  async moveTo(id: string, url: string): Promise<void> {
    await this.db.agent.update({ where: { id }, data: { url } });
  }

  /** What the agent last said about its next wake (null: nothing scheduled). */
  async nextWake(id: string): Promise<Date | null> {
    const row = await this.db.agent.findUnique({ where: { id }, select: { nextWakeAt: true } });
    return row?.nextWakeAt ?? null;
  }

  /** A banned user's agent gets none: the ban cleared it, and the report of the agent it stopped does not bring it back. */
  async setNextWake(id: string, at: Date | null): Promise<void> {
    const now = new Date();
    await this.db.$executeRaw`
      UPDATE agents SET wake_attempts = 0, wake_lease_until = NULL,
        next_wake_at = CASE WHEN EXISTS (SELECT 1 FROM users u WHERE u.id = agents.user_id AND ${bannedAt('u', now)}) THEN NULL ELSE CAST(${at} AS timestamp(3)) END
      WHERE id = ${id}::uuid`;
  }

  async remove(name: string): Promise<void> {
    const { count } = await this.db.agent.deleteMany({ where: { name } });
    if (count === 0) throw notFound(`No agent named ${name}`, 'AGENT_NOT_FOUND');
  }
}
