import pg from 'pg';

/** The database name of a postgresql:// URL. */
export function databaseName(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  if (!name) throw new Error('DATABASE_URL has no database name');
  return name;
}

/** `name` quoted as an SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Runs `fn` with a client connected to the server's `postgres` database (for CREATE/DROP DATABASE). */
export async function withServerClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const serverUrl = new URL(url);
  serverUrl.pathname = '/postgres';
  const client = new pg.Client({ connectionString: serverUrl.toString() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * Creates the URL's database when it does not exist yet. Safe to call from several processes at once.
 */
export async function ensureDatabaseExists(url: string): Promise<boolean> {
  const name = databaseName(url);
  return withServerClient(url, async (client) => {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return false;
    try {
      await client.query(`CREATE DATABASE ${quoteIdent(name)}`);
      return true;
    } catch (err) {
      const code = (err as { code?: string }).code;
      // 42P04 duplicate_database / 23505: another process created it between our check and create.
      if (code === '42P04' || code === '23505') return false;
      throw err;
    }
  });
}
