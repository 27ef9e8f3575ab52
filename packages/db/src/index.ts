export { createDatabase } from './database';
export type { Database, DatabaseOptions } from './database';
export { applyMigrations, listMigrations, MIGRATIONS_DIR } from './migrate';
export type { MigrationResult } from './migrate';
export { ensureDatabaseExists, databaseName, quoteIdent, withServerClient } from './ensure-database';
export { SQL_ONLY_CONSTRAINTS, SQL_ONLY_FUNCTIONS } from './sql-only-constraints';
export { isDatabaseUnavailable, isUniqueViolation, isValueRefused } from './pg-errors';
export { PrismaClient, Prisma } from './generated/prisma/client';
export type * from './generated/prisma/models';
