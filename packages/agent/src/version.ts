/**
 * What the agent reports as its Nomad version (`nomad.version`): the client protocol follows Nomad 1.11's (node
 * introduction tokens and node identities), so a job constrained on a Nomad version sees the one it was written for.
 * `nomad.revision` names this agent.
 */
export const nomadVersion = '1.11.0';
export const agentRevision = 'keyhaven-agent-0.1.0';
