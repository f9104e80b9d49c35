import type { NavEntry, RouteDef } from '../router.tsx';
import { AuditPage } from './audit.tsx';
import { CapabilitiesPage } from './capabilities.tsx';
import { KvPage } from './kv-page.tsx';
import { LeasesPage } from './leases.tsx';
import { MountsPage } from './mounts.tsx';
import { PoliciesPage } from './policies.tsx';
import { PolicyPage } from './policy-page.tsx';
import { TokensPage } from './tokens.tsx';

/** The secrets service's pages: mounts and kv, leases, policies, tokens, audit, capabilities. */
export const secretsRoutes: RouteDef[] = [
  { pattern: '/ui/vault/secrets', title: 'Secret engines', view: () => <MountsPage /> },
  { pattern: '/ui/vault/secrets/', title: 'Secret engines', view: () => <MountsPage /> },
  { pattern: '/ui/vault/secrets/*path', title: 'Secrets', view: ({ path }) => <KvPage path={path ?? ''} /> },
  { pattern: '/ui/vault/leases', title: 'Leases', view: () => <LeasesPage /> },
  { pattern: '/ui/vault/policies', title: 'Policies', view: () => <PoliciesPage /> },
  {
    pattern: '/ui/vault/policies/:name',
    title: 'Policy',
    view: ({ name }) => <PolicyPage key={name} name={name ?? ''} />,
  },
  { pattern: '/ui/vault/tokens', title: 'Tokens', view: () => <TokensPage /> },
  { pattern: '/ui/vault/audit', title: 'Audit devices', view: () => <AuditPage /> },
  { pattern: '/ui/vault/capabilities', title: 'Capabilities', view: () => <CapabilitiesPage /> },
];

export const secretsNav: NavEntry[] = [
  { href: '/ui/vault/secrets', label: 'Secrets' },
  { href: '/ui/vault/leases', label: 'Leases' },
  { href: '/ui/vault/policies', label: 'Policies' },
  { href: '/ui/vault/tokens', label: 'Tokens' },
  { href: '/ui/vault/audit', label: 'Audit devices' },
  { href: '/ui/vault/capabilities', label: 'Capabilities' },
];
