import { z } from 'zod';
import { duration, stringList, bool, count } from '/work/main/packages/core/src/http/fields.ts';
const s = z.object({ tags: stringList.optional(), ttl: duration.optional(), b: bool.optional(), c: count.optional(), meta: z.record(z.string(), z.string()).optional() , e: z.enum(['a','b']).optional()});
for (const v of [{tags:[1,2]},{ttl:true},{ttl:'-1'},{b:1},{c:-1},{c:'x'},{meta:{a:1}},{e:'z'},{tags:{}}]) {
  const r = s.safeParse(v);
  console.log(JSON.stringify(v), JSON.stringify(r.error?.issues));
}
