import fc from 'fast-check';
import { bodyArbitrary } from './contract-arbitraries.test-kit';
import Ajv2020 from 'ajv/dist/2020';
import { listModels } from './registry';
import type { BuiltContract } from './define-contract';
import { JOI_OPTIONS } from './dsl-to-joi';

/**
 * Property: the published JSON Schema (Ajv 2020) and the Joi validator give the same verdict on generated bodies.
 * Violations of listed server rules (rule `server:*`) are the documented exceptions: Ajv may accept those bodies.
 */

const ajv = new Ajv2020({ strict: true, allErrors: false });

describe('published JSON Schema and Joi validator agree', () => {
  const models = listModels().filter((m) => m.contract);
  it.each(models.map((m) => [m.id, m] as const))('%s: same verdict on generated bodies', (_id, m) => {
    const contract = m.contract as BuiltContract;
    const check = ajv.compile(contract.inputSchema);
    let accepted = 0;
    let rejected = 0;
    fc.assert(
      fc.property(
        fc.boolean().chain((clean) => bodyArbitrary(contract, [m.id, ...m.aliases], clean)),
        (body) => {
          const schemaOk = check(body);
          const joiOk = contract.joiSchema.validate(body, JOI_OPTIONS).error === undefined;
          if (schemaOk !== joiOk) throw new Error(`Ajv says ${schemaOk}, Joi says ${joiOk}: ${JSON.stringify(ajv.errorsText(check.errors))}`);
          const full = contract.validate(body, String(body.model));
          if (full.ok) {
            accepted++;
            if (!schemaOk) throw new Error('contract accepted a body the schema rejects');
          } else {
            rejected++;
            // only listed server rules may reject what the schema accepts
            if (schemaOk && !full.violation.rule.startsWith('server:')) throw new Error(`schema accepts but contract rejects with ${full.violation.rule}`);
            if (full.violation.rule.startsWith('server:')) expect(contract.serverRules.map((r) => `server:${r.id}`)).toContain(full.violation.rule);
            expect(full.violation.message.length).toBeGreaterThan(10);
          }
        },
      ),
      { numRuns: 250, seed: 20250601 },
    );
    // the generator must exercise both sides, else the property proves little
    expect(accepted).toBeGreaterThan(10);
    expect(rejected).toBeGreaterThan(10);
  });
});
