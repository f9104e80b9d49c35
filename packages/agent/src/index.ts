export { Agent, type AgentOptions } from './agent.ts';
export { type AgentConfig, loadConfig } from './config.ts';
export { ProtocolClient, ProtocolError } from './protocol.ts';
