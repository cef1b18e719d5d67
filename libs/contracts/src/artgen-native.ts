import type { ArtgenButton } from './artgen-custom-id';

export type ArtgenNativeStatus = 'SUBMITTED' | 'IN_PROGRESS' | 'SUCCESS' | 'FAILURE' | 'MODAL';

/** The art suite's native task (spec 2.3), served unwrapped by `GET /v1/artgen/<id>`; times in Unix ms. */
export interface ArtgenNativeTask {
  id: string;
  action: string;
  status: ArtgenNativeStatus;
  progress: string;
  prompt: string;
  description?: string;
  fail_reason?: string;
  grid_image_url?: string;
  image_urls: string[];
  video_urls?: string[];
  width?: number;
  height?: number;
  buttons: ArtgenButton[];
  submit_time: number;
  start_time?: number;
  finish_time?: number;
}
