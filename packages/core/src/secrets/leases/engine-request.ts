/** What one function asks of the function that bundles an engine (`answerEngineRequest` in entry-points/engine-requests.ts). */
export type EngineRequest = { revokeLease: string } | { revokePrefix: string } | { finishDisabled: true };

/**
 * Asks the function that bundles a mount type's backend to do a request, and waits for it: true once done there,
 * false when no such function is known; throws when that function fails.
 */
export type AskEngine = (mountType: string, request: EngineRequest) => Promise<boolean>;
