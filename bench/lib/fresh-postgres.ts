// A throwaway database for a benchmark on the PostgreSQL server of DATABASE_URL (or the local one).
import pg from 'pg';

/** Creates database `name` and gives its URL; undefined when no server answers. `drop` removes it again. */
export async function freshPostgres(name: string): Promise<{ url: string; drop: () => Promise<void> } | undefined> {
  const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client({ connectionString: adminUrl });
  try {
    await admin.connect();
  } catch {
    return undefined;
  }
  await admin.query(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}
