import type { ModelDefinition } from './types';
import type { BuiltContract } from './define-contract';
import { LUMEN_MODELS, lumenContract } from './lumen-2.contract';

/** 2025-06-01T00:00:00Z: the `created` of every model of this release. */
const CREATED = 1748736000;

const T2I = 'Text to Image';
const I2I = 'Image to Image';

function media(
  id: string,
  category: 'image' | 'video',
  ownedBy: string,
  capabilityTags: readonly string[],
  contract: BuiltContract,
  aliases: readonly string[] = [],
): ModelDefinition {
  return {
    id,
    aliases,
    ownedBy,
    created: CREATED,
    category,
    capabilityTags,
    supportedEndpointTypes: [category === 'image' ? 'image-generation' : 'video-generation'],
    pool: category,
    contract,
  };
}

const chat = (id: string, capabilityTags: readonly string[]): ModelDefinition => ({
  id,
  aliases: [],
  ownedBy: 'lumen',
  created: CREATED,
  category: 'chat',
  capabilityTags,
  supportedEndpointTypes: ['messages'],
});

export const MODEL_DEFINITIONS: ModelDefinition[] = [
  ...LUMEN_MODELS.map((id) => media(id, 'image', 'lumen', [T2I, I2I], lumenContract(id))),
  {
    id: 'artgen',
    aliases: [],
    ownedBy: 'artgen',
    created: CREATED,
    category: 'image',
    capabilityTags: [T2I, I2I],
    supportedEndpointTypes: ['artgen'],
    pool: 'artgen',
  },
  chat('lumen-chat-1', ['Text', 'Vision']),
  chat('lumen-chat-1-mini', ['Text']),
  chat('lumen-omni-1', ['Text', 'Vision', 'Audio', 'Omni']),
];
