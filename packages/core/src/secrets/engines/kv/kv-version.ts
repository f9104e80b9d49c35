export { isKvV2 } from '../../mounts/kv-version.ts';
