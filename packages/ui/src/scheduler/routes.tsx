import type { NavEntry, RouteDef } from '../router.tsx';
import { AllocationPage } from './allocation.tsx';
import { AuthMethodPage, AuthMethodsPage, NewAuthMethodPage } from './auth-methods.tsx';
import { BindingRulePage, BindingRulesPage, NewBindingRulePage } from './binding-rules.tsx';
import { DeploymentPage } from './deployment.tsx';
import { DeploymentsPage } from './deployments.tsx';
import { EventsPage } from './events.tsx';
import { JobPage } from './job.tsx';
import { RunJobPage } from './job-run.tsx';
import { JobsPage } from './jobs.tsx';
import { NamespacePage, NamespacesPage, NewNamespacePage } from './namespaces.tsx';
import { NewNodePoolPage, NodePoolPage, NodePoolsPage } from './node-pools.tsx';
import { NodePage, NodesPage } from './nodes.tsx';
import { NewPolicyPage, PoliciesPage, PolicyPage } from './policies.tsx';
import { NewRolePage, RolePage, RolesPage } from './roles.tsx';
import { RuleTesterPage } from './rule-tester.tsx';
import { ServicePage, ServicesPage } from './services.tsx';
import { NewTokenPage, TokenPage, TokensPage } from './tokens.tsx';

/**
 * The scheduler service's pages: ACL tokens, policies, roles, auth methods, binding rules, the rule tester, nodes,
 * node pools, namespaces, jobs and their allocations, deployments, services, events.
 */
export const schedulerRoutes: RouteDef[] = [
  { pattern: '/ui/scheduler/tokens', title: 'ACL tokens', view: () => <TokensPage /> },
  { pattern: '/ui/scheduler/tokens/new', title: 'Create an ACL token', view: () => <NewTokenPage /> },
  {
    pattern: '/ui/scheduler/tokens/:accessor',
    title: 'ACL token',
    view: ({ accessor = '' }) => <TokenPage key={accessor} accessor={accessor} />,
  },
  { pattern: '/ui/scheduler/policies', title: 'ACL policies', view: () => <PoliciesPage /> },
  { pattern: '/ui/scheduler/policies/new', title: 'Create an ACL policy', view: () => <NewPolicyPage /> },
  {
    pattern: '/ui/scheduler/policies/:name',
    title: 'ACL policy',
    view: ({ name = '' }) => <PolicyPage key={name} name={name} />,
  },
  { pattern: '/ui/scheduler/roles', title: 'ACL roles', view: () => <RolesPage /> },
  { pattern: '/ui/scheduler/roles/new', title: 'Create an ACL role', view: () => <NewRolePage /> },
  { pattern: '/ui/scheduler/roles/:id', title: 'ACL role', view: ({ id = '' }) => <RolePage key={id} id={id} /> },
  { pattern: '/ui/scheduler/auth-methods', title: 'ACL auth methods', view: () => <AuthMethodsPage /> },
  { pattern: '/ui/scheduler/auth-methods/new', title: 'Create an ACL auth method', view: () => <NewAuthMethodPage /> },
  {
    pattern: '/ui/scheduler/auth-methods/:name',
    title: 'ACL auth method',
    view: ({ name = '' }) => <AuthMethodPage key={name} name={name} />,
  },
  { pattern: '/ui/scheduler/binding-rules', title: 'ACL binding rules', view: () => <BindingRulesPage /> },
  {
    pattern: '/ui/scheduler/binding-rules/new',
    title: 'Create an ACL binding rule',
    view: () => <NewBindingRulePage />,
  },
  { pattern: '/ui/scheduler/binding-rules/test', title: 'Binding-rule tester', view: () => <RuleTesterPage /> },
  {
    pattern: '/ui/scheduler/binding-rules/:id',
    title: 'ACL binding rule',
    view: ({ id = '' }) => <BindingRulePage key={id} id={id} />,
  },
  { pattern: '/ui/scheduler/nodes', title: 'Nodes', view: () => <NodesPage /> },
  { pattern: '/ui/scheduler/nodes/:id', title: 'Node', view: ({ id = '' }) => <NodePage key={id} id={id} /> },
  { pattern: '/ui/scheduler/node-pools', title: 'Node pools', view: () => <NodePoolsPage /> },
  { pattern: '/ui/scheduler/node-pools/new', title: 'Create a node pool', view: () => <NewNodePoolPage /> },
  {
    pattern: '/ui/scheduler/node-pools/:name',
    title: 'Node pool',
    view: ({ name = '' }) => <NodePoolPage key={name} name={name} />,
  },
  { pattern: '/ui/scheduler/namespaces', title: 'Namespaces', view: () => <NamespacesPage /> },
  { pattern: '/ui/scheduler/namespaces/new', title: 'Create a namespace', view: () => <NewNamespacePage /> },
  {
    pattern: '/ui/scheduler/namespaces/:name',
    title: 'Namespace',
    view: ({ name = '' }) => <NamespacePage key={name} name={name} />,
  },
  { pattern: '/ui/scheduler/jobs', title: 'Jobs', view: () => <JobsPage /> },
  { pattern: '/ui/scheduler/jobs/new', title: 'Run a job', view: () => <RunJobPage /> },
  {
    pattern: '/ui/scheduler/jobs/:namespace/:id',
    title: 'Job',
    view: ({ namespace = '', id = '' }) => <JobPage key={`${namespace}/${id}`} namespace={namespace} id={id} />,
  },
  { pattern: '/ui/scheduler/deployments', title: 'Deployments', view: () => <DeploymentsPage /> },
  {
    pattern: '/ui/scheduler/deployments/:id',
    title: 'Deployment',
    view: ({ id = '' }) => <DeploymentPage key={id} id={id} />,
  },
  {
    pattern: '/ui/scheduler/allocations/:id',
    title: 'Allocation',
    view: ({ id = '' }) => <AllocationPage key={id} id={id} />,
  },
  { pattern: '/ui/scheduler/services', title: 'Services', view: () => <ServicesPage /> },
  {
    pattern: '/ui/scheduler/services/:namespace/:name',
    title: 'Service',
    view: ({ namespace = '', name = '' }) => (
      <ServicePage key={`${namespace}/${name}`} namespace={namespace} name={name} />
    ),
  },
  { pattern: '/ui/scheduler/events', title: 'Event stream', view: () => <EventsPage /> },
];

export const schedulerNav: NavEntry[] = [
  { href: '/ui/scheduler/tokens', label: 'ACL tokens' },
  { href: '/ui/scheduler/policies', label: 'ACL policies' },
  { href: '/ui/scheduler/roles', label: 'ACL roles' },
  { href: '/ui/scheduler/auth-methods', label: 'Auth methods' },
  { href: '/ui/scheduler/binding-rules', label: 'Binding rules' },
  { href: '/ui/scheduler/binding-rules/test', label: 'Binding-rule tester' },
  { href: '/ui/scheduler/nodes', label: 'Nodes' },
  { href: '/ui/scheduler/node-pools', label: 'Node pools' },
  { href: '/ui/scheduler/namespaces', label: 'Namespaces' },
  { href: '/ui/scheduler/jobs', label: 'Jobs' },
  { href: '/ui/scheduler/deployments', label: 'Deployments' },
  { href: '/ui/scheduler/services', label: 'Services' },
  { href: '/ui/scheduler/events', label: 'Event stream' },
];
