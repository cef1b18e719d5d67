/** packages/sdk/src/generated/models.ts is what scripts/gen-sdk-types.ts makes of today's model registry. */
import { readFileSync } from 'node:fs';
import { listModels } from '@gmg/contracts';
import { SDK_MODELS_FILE, renderSdkModels } from '../../scripts/gen-sdk-types';

describe('generated SDK request types', () => {
  it('are up to date with the model registry (else: npm run gen:sdk)', () => {
    expect(readFileSync(SDK_MODELS_FILE, 'utf8')).toBe(renderSdkModels());
  });

  it('have one request interface per image/video model and per art-suite action', () => {
    const text = renderSdkModels();
    for (const m of listModels()) {
      if (m.contract) expect(text).toContain(`model: ${[m.id, ...m.aliases].map((n) => JSON.stringify(n)).join(' | ')};`);
      for (const [action, c] of Object.entries(m.actionContracts ?? {}))
        expect(text).toContain(`${JSON.stringify(action).replace(/^"([a-z]+)"$/, '$1')}: ${JSON.stringify(c.endpoint)}`);
    }
  });
});
