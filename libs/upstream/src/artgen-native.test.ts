import { UpstreamError } from '@gmg/errors';
import { mapArtgenNative, parseNativeProgress } from './artgen-native';
import { parseAckTaskId } from './gateway.adapter';

describe('art suite native task mapping', () => {
  it('maps SUBMITTED, IN_PROGRESS and MODAL to open states with text progress', () => {
    expect(mapArtgenNative({ status: 'SUBMITTED', progress: '0%' })).toMatchObject({ status: 'pending', progress: 0, native: { status: 'SUBMITTED' } });
    expect(mapArtgenNative({ status: 'IN_PROGRESS', progress: '46%', action: 'IMAGINE' })).toMatchObject({
      status: 'processing',
      progress: 46,
      native: { action: 'IMAGINE' },
    });
    expect(mapArtgenNative({ status: 'MODAL', progress: '100%' })).toMatchObject({ status: 'processing', native: { status: 'MODAL' } });
  });

  it('maps SUCCESS to a result with the tiles, videos and description, and drops upstream buttons', () => {
    const p = mapArtgenNative({
      status: 'SUCCESS',
      action: 'IMAGINE',
      grid_image_url: 'http://u/g.png',
      image_urls: ['http://u/1.png', 'http://u/2.png', 'http://u/3.png', 'http://u/4.png'],
      buttons: [{ customId: 'MJ::JOB::upsample::1::theirs', label: 'U1' }],
      width: 1024,
      height: 1024,
      finish_time: 1_700_000_000_000,
    });
    expect(p.status).toBe('completed');
    expect(p.progress).toBe(100);
    expect(p.result!.images).toHaveLength(4);
    expect(p.native!.grid_image_url).toBe('http://u/g.png');
    expect(p.native!.buttons).toBeUndefined();
    const v = mapArtgenNative({
      status: 'SUCCESS',
      video_urls: ['http://u/a.mp4', 'http://u/b.mp4'],
      image_urls: ['http://u/a.png', 'http://u/b.png'],
      finish_time: 1_700_000_000_000,
    });
    expect(v.result!.videos).toEqual([
      { url: ['http://u/a.mp4'], expires_at: 1_700_086_400 },
      { url: ['http://u/b.mp4'], expires_at: 1_700_086_400 },
    ]);
    expect(mapArtgenNative({ status: 'SUCCESS', description: '1️⃣ a cat' }).result!.text).toBe('1️⃣ a cat');
  });

  it('maps FAILURE to a failure with the reason; a banned prompt is moderation', () => {
    expect(mapArtgenNative({ status: 'FAILURE', fail_reason: 'Generation failed' }).error).toEqual({ message: 'Generation failed', moderation: false });
    expect(mapArtgenNative({ status: 'FAILURE', fail_reason: 'Banned prompt detected' }).error!.moderation).toBe(true);
  });

  it('refuses an unknown status as a retryable upstream error', () => {
    expect(() => mapArtgenNative({ status: 'EXPLODED' })).toThrow(UpstreamError);
  });

  it('parses progress text', () => {
    expect(parseNativeProgress('46%')).toBe(46);
    expect(parseNativeProgress(120)).toBe(100);
    expect(parseNativeProgress('x')).toBe(0);
  });

  it('reads the art suite acknowledgement task id', () => {
    expect(parseAckTaskId({ code: 200, data: { task_id: 'up_1', action: 'IMAGINE', status: 'SUBMITTED' } })).toBe('up_1');
  });
});
