import type { ModelDefinition } from './types';
import type { BuiltContract } from './define-contract';
import { LUMEN_MODELS, lumenContract } from './lumen-2.contract';
import { dreamContract, pictContract, sparkImage2Contract, sparkImagineContract } from './image-models.contract';
import { omniContract, pixelContract } from './pixel-omni.contract';
import { ARTGEN_CONTRACTS } from './artgen.contract';
import { clipContract } from './clip.contract';
import { kineticContract } from './kinetic.contract';
import { motion2Contract, motionProContract } from './motion.contract';
import { reelContract } from './reel.contract';
import { sparkVideoContract } from './spark-video.contract';
import { waveEditContract, waveI2vContract, waveR2vContract } from './wave.contract';

/** 2025-06-01T00:00:00Z: the `created` of every model of this release. */
const CREATED = 1748736000;

const T2I = 'Text to Image';
const I2I = 'Image to Image';
const T2V = 'Text to Video';
const I2V = 'Image to Video';
const V2V = 'Video to Video';

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
  // one money path, two wire protocols (docs/chat.md)
  supportedEndpointTypes: ['messages', 'chat-completions'],
});

export const MODEL_DEFINITIONS: ModelDefinition[] = [
  ...LUMEN_MODELS.map((id) => media(id, 'image', 'lumen', [T2I, I2I], lumenContract(id))),
  media('pict-image-2', 'image', 'pict', [T2I, I2I], pictContract(), ['pict-image-2-ext']),
  media('spark-imagine-image-2.0', 'image', 'spark', [T2I, I2I], sparkImage2Contract()),
  media('spark-imagine-1.5-main', 'image', 'spark', [T2I, I2I], sparkImagineContract('spark-imagine-1.5-main'), ['spark-imagine-1.5-ext']),
  media('spark-imagine-image', 'image', 'spark', [T2I, I2I], sparkImagineContract('spark-imagine-image')),
  media('spark-imagine-image-quality', 'image', 'spark', [T2I, I2I], sparkImagineContract('spark-imagine-image-quality')),
  media('dream-5-0-pro', 'image', 'dream', [T2I, I2I], dreamContract('dream-5-0-pro')),
  media('dream-5-0-lite', 'image', 'dream', [T2I, I2I], dreamContract('dream-5-0-lite')),
  media('pixel-v6', 'video', 'pixel', [T2V, I2V, V2V], pixelContract()),
  media('Omni-Flash-Ext', 'video', 'omni', [T2V, I2V, V2V], omniContract()),
  media('spark-imagine-1.5-video-main', 'video', 'spark', [T2V, I2V], sparkVideoContract(), ['spark-imagine-1.5-video-ext']),
  media('wave2.6-i2v-flash', 'video', 'wave', [I2V], waveI2vContract()),
  media('kinetic-video-o1', 'video', 'kinetic', [T2V, I2V, V2V], kineticContract()),
  media('clipq3-pro', 'video', 'clip', [T2V, I2V], clipContract('clipq3-pro')),
  media('clipq3-turbo', 'video', 'clip', [T2V, I2V], clipContract('clipq3-turbo')),
  media('motion-1-0-pro-fast', 'video', 'motion', [T2V, I2V], motionProContract('motion-1-0-pro-fast')),
  media('motion-1-0-pro-quality', 'video', 'motion', [T2V, I2V], motionProContract('motion-1-0-pro-quality')),
  media('motion-2.0', 'video', 'motion', [I2V], motion2Contract()),
  media('reel-v4-fast', 'video', 'reel', [T2V, I2V], reelContract('reel-v4-fast')),
  media('reel-v4-std', 'video', 'reel', [T2V, I2V], reelContract('reel-v4-std')),
  media('wave2.7-videoedit', 'video', 'wave', [V2V], waveEditContract()),
  media('wave2.7-r2v', 'video', 'wave', [I2V], waveR2vContract()),
  {
    id: 'artgen',
    aliases: [],
    ownedBy: 'artgen',
    created: CREATED,
    category: 'image',
    capabilityTags: [T2I, I2I],
    supportedEndpointTypes: ['artgen'],
    pool: 'artgen',
    actionContracts: ARTGEN_CONTRACTS,
  },
  chat('lumen-chat-1', ['Text', 'Vision']),
  chat('lumen-chat-1-mini', ['Text']),
  chat('lumen-omni-1', ['Text', 'Vision', 'Audio', 'Omni']),
];
