import { Client } from 'ldapts';
import { periodicJobs } from '../../packages/core/src/entry-points/engine-periodic-jobs.ts';
import { ldapBackend } from '../../packages/core/src/secrets/engines/ldap/ldap-backend.ts';
import { passwordChanges } from '../../packages/core/src/secrets/engines/ldap/schemas.ts';
import { adminDn, adminPassword, peopleDn, serviceAccountsDn } from './slapd.ts';

/**
 * What the tests of the directory engine's healing share (test/secrets/ldap-heal.test.ts, test/attacks/ldap-heal.test.ts,
 * test/deploy/restore-heal.test.ts, test/secrets/ldap-static-roles.test.ts): the entries' names, a password changed
 * behind the engine's back, and the engine's periodic account check as the job runs it.
 */
export const personDn = (name: string) => `cn=${name},${peopleDn}`;
export const accountDn = (name: string) => `cn=${name},${serviceAccountsDn}`;

/** Sets a password as the directory's administrator, behind the engine's back: what a lost table write leaves. */
export async function setDirectoryPassword(url: string, dn: string, password: string): Promise<void> {
  const admin = new Client({ url });
  try {
    await admin.bind(adminDn, adminPassword);
    await admin.modify(dn, passwordChanges('openldap', password));
  } finally {
    await admin.unbind().catch(() => undefined);
  }
}

/** The directory engine's `account checks` periodic job, as the engine's job function runs it. */
export const accountCheckJob = periodicJobs([ldapBackend]).find(({ job }) => job.name === 'account checks')?.job;
