import { dynamicDn, groupsDn } from './slapd.ts';

/**
 * The deletion and rollback LDIF of a dynamic role whose accounts live under `ou=dynamic` and join `developers`
 * (the fixture directory of test/support/slapd.ts); each test writes its own creation LDIF.
 */
export const deletionLdif = `dn: cn=developers,${groupsDn}
changetype: modify
delete: member
member: cn={{.Username}},${dynamicDn}
-

dn: cn={{.Username}},${dynamicDn}
changetype: delete
`;

export const rollbackLdif = `dn: cn={{.Username}},${dynamicDn}
changetype: delete
`;
