/**
 * What else happened while a run was measured, so a noisy round can be explained rather than
 * averaged away: the machine's 1-minute load average (other processes on the two cores) and
 * whether PostgreSQL ran a checkpoint (the server-wide flush of dirty pages, every 5 minutes by
 * default, that slows every writer for its duration).
 */
import { loadavg } from 'node:os';
import pg from 'pg';

export interface Conditions {
  loadAverage: number;
  checkpoint: boolean;
}

export async function conditionsProbe(postgresUrl: string | undefined) {
  const client = postgresUrl ? new pg.Client({ connectionString: postgresUrl }) : undefined;
  await client?.connect();
  // pg_stat_bgwriter holds the counts up to PostgreSQL 16; 17 moved them to pg_stat_checkpointer.
  const checkpoints = async (): Promise<number> => {
    if (!client) return 0;
    const query = (await client.query(`SELECT to_regclass('pg_catalog.pg_stat_checkpointer') IS NOT NULL AS v17`)).rows[0].v17
      ? 'SELECT num_timed + num_requested AS n FROM pg_stat_checkpointer'
      : 'SELECT checkpoints_timed + checkpoints_req AS n FROM pg_stat_bgwriter';
    return Number((await client.query(query)).rows[0].n);
  };
  return {
    async around<T>(measure: () => Promise<T>): Promise<T & Conditions> {
      const before = await checkpoints();
      const result = await measure();
      return { ...result, loadAverage: Math.round(loadavg()[0]! * 10) / 10, checkpoint: (await checkpoints()) > before };
    },
    close: () => client?.end(),
  };
}
