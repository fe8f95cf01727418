/**
 * Parameterised SQL straight on the account store's driver — the pg pool or the PGlite instance
 * that Prisma's adapter uses too — for the few statements on the hottest paths: guest sign-in,
 * refresh rotation and the session-status read behind every protected call. Everything else goes
 * through Prisma. Why: Prisma's client layer costs ≈ 0.4 ms of CPU per query on these machines,
 * several times the statement itself (measured: `$queryRaw` of the rotation ≈ 550 µs CPU, the
 * same statement on the pool ≈ 130 µs), and these paths run one statement each.
 *
 * Written as a tagged template, like Prisma's `$queryRaw`: every `${value}` becomes a `$n`
 * parameter, never text. Dates travel as UTC ISO strings, because the columns are `timestamp(3)`
 * holding UTC (as Prisma writes them) and node-pg would otherwise send local time. Rows come back
 * as the driver parses them: select booleans, text and uuids here, compare times in SQL.
 */
export type SqlValue = string | number | boolean | Date | null;

export type HotSql = <Row>(strings: TemplateStringsArray, ...values: SqlValue[]) => Promise<Row[]>;

/** What both drivers offer: `pg.Pool#query` and `PGlite#query`. */
export interface SqlDriver {
  query(text: string, params: unknown[]): Promise<{ rows: unknown[] }>;
}

export function hotSql(driver: SqlDriver): HotSql {
  const texts = new WeakMap<TemplateStringsArray, string>();
  return async <Row>(strings: TemplateStringsArray, ...values: SqlValue[]) => {
    let text = texts.get(strings);
    if (text === undefined) {
      text = strings.reduce((sql, part, i) => `${sql}$${i}${part}`);
      texts.set(strings, text);
    }
    const params = values.map((value) => (value instanceof Date ? value.toISOString() : value));
    return (await driver.query(text, params)).rows as Row[];
  };
}

/** A unique-index violation (SQLSTATE 23505), as pg and PGlite report it. */
export const isUniqueViolation = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === '23505';
