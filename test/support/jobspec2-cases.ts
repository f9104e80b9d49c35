/**
 * Inputs of Nomad's `jobspec2/parse_test.go` (hashicorp/nomad at aa026cc9, MPL-2.0) that more than one suite parses:
 * the differential expectations (`test/differential/jobspec2-expectations.test.ts`) and the parse route's tests.
 */

/** TestParse_UnknownVariables: a known variable interpolated, an unknown one kept as written; `region_var = "aug"`. */
export const unknownVariablesHcl = `
variables {
  region_var = "default"
}
job "example" {
  datacenters = [for s in ["dc1", "dc2"] : upper(s)]
  region      = var.region_var
  meta {
    known_var   = "\${var.region_var}"
    unknown_var = "\${UNKNOWN}"
  }
}
`;
