/**
 * The job the placement benches place (placement.bench.ts, plan-apply.bench.ts): a service job of `groupCount`
 * allocations, one raw_exec task of 100 MHz and 256 MB and one dynamic port, as `PUT /v1/jobs` takes it.
 */
export const serviceJobSpec = (id: string, groupCount: number) => ({
  ID: id,
  Type: 'service',
  TaskGroups: [
    {
      Name: 'web',
      Count: groupCount,
      Networks: [{ DynamicPorts: [{ Label: 'http', To: -1 }] }],
      Tasks: [
        {
          Name: 'server',
          Driver: 'raw_exec',
          Config: { command: 'sleep' },
          Resources: { CPU: 100, MemoryMB: 256 },
        },
      ],
    },
  ],
});
