/**
 * Parameterised SQL straight on the account store's driver — the pg pool or the PGlite instance
 * that Prisma's adapter uses too — for the few statements on the hottest paths: guest sign-in,
 * refresh rotation and the session-status read behind every protected call. Everything else goes
 * through Prisma. Why: Prisma's client layer costs ≈ 0.4 ms of CPU per query on these machines,
 * several times the statement itself (measured: `$queryRaw` of the rotation ≈ 550 µs CPU, the
 * same statement on the pool ≈ 130 µs), and these paths run one statement each.
 *
 * Written as a tagged template, like Prisma's `$queryRaw`: every `${value}` becomes a `$n`
 * parameter, never text. Each template is one named statement, so on PostgreSQL every pooled
 * connection parses and plans it once. Dates travel as UTC ISO strings, because the columns are `timestamp(3)`
 * holding UTC (as Prisma writes them) and node-pg would otherwise send local time. Rows come back
 * as the driver parses them: select booleans, text and uuids here, compare times in SQL.
 */
export type SqlValue = string | number | boolean | Date | null;

export type HotSql = <Row>(strings: TemplateStringsArray, ...values: SqlValue[]) => Promise<Row[]>;

export interface Statement {
  /** Unique per text: `hot_1`, `hot_2`, … */
  name: string;
  text: string;
}

/** Runs one statement on the driver (store.ts has one for pg and one for PGlite). */
export type SqlDriver = (statement: Statement, params: unknown[]) => Promise<unknown[]>;

export function hotSql(driver: SqlDriver): HotSql {
  const statements = new WeakMap<TemplateStringsArray, Statement>();
  return async <Row>(strings: TemplateStringsArray, ...values: SqlValue[]) => {
    let statement = statements.get(strings);
    if (statement === undefined) {
      statement = { name: `hot_${nextStatement++}`, text: strings.reduce((sql, part, i) => `${sql}$${i}${part}`) };
      statements.set(strings, statement);
    }
    const params = values.map((value) => (value instanceof Date ? value.toISOString() : value));
    return (await driver(statement, params)) as Row[];
  };
}

let nextStatement = 1;

/** A unique-index violation (SQLSTATE 23505), as pg and PGlite report it. */
export const isUniqueViolation = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === '23505';
