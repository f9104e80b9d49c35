import * as z from 'zod';
import { typeString } from '../../framework/vault-field-types.ts';

/** The name of a roleset, static account or impersonated account: letters, digits, `_` and `-`. */
export const itemName = typeString.pipe(z.string().regex(/^[\w-]+$/, 'must be letters, digits, "_" and "-"'));
