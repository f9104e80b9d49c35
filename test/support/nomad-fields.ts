/**
 * Field sets of Nomad's API objects, as its JSON sends them, for tests that assert an object's exact keys. Sorted, as
 * the tests compare them with `Object.keys(…).sort()`.
 */

/** `structs.ServiceRegistration`: no omitempty, every field sent. */
export const serviceRegistrationFields = [
  'ID',
  'ServiceName',
  'Namespace',
  'NodeID',
  'Datacenter',
  'JobID',
  'AllocID',
  'Tags',
  'Address',
  'Port',
  'CreateIndex',
  'ModifyIndex',
].sort();
