// Generate an image, wait for it, download it:  GMG_API_KEY=sk-… npx tsx packages/sdk/examples/generate-image.ts
import { writeFile } from 'node:fs/promises';
// eslint-disable-next-line @nx/enforce-module-boundaries -- an example imports the package the way its users do
import { GatewayClient } from '@gmg/sdk';

async function main(): Promise<void> {
  const gmg = new GatewayClient({ baseUrl: process.env.GMG_BASE_URL ?? 'http://127.0.0.1:8080', apiKey: process.env.GMG_API_KEY ?? '' });
  const { taskId } = await gmg.images.generate({ model: 'lumen-2-pro', prompt: 'a lighthouse at dusk', size: '16:9' });
  const task = await gmg.tasks.wait(taskId, { onProgress: (t) => console.log(`${taskId} ${t.status} ${t.progress}%`) });
  const url = task.result!.images![0]!.url;
  await writeFile('lighthouse.jpeg', Buffer.from(await (await fetch(url)).arrayBuffer()));
  console.log(`saved lighthouse.jpeg (${url}), cost ${task.cost}`);
}
void main();
