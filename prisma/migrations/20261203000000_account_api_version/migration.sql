-- Dated API versions (docs/api.md, "Versions"): the version an account's requests get when they
-- send no `TaskApi-Version` header, pinned when the account is created. Every existing account is
-- pinned to the first version, 2026-11-01 (the contract it has been using). A constant default:
-- a catalog-only change, no table rewrite; the API sets the column itself on every new account
-- (the newest version at that moment), the default only serves writers of the previous release.
ALTER TABLE "accounts" ADD COLUMN "api_version" TEXT NOT NULL DEFAULT '2026-11-01';

-- A date, as the header spells it; every existing row holds the default, so nothing is rejected.
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_api_version_is_date" CHECK (api_version ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$');
