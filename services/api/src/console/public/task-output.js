// A task's result and files as people look at them: image thumbnails that open full size, a video
// player, and for face detection the input image with the detected faces outlined (an SVG laid over
// the image in the image's own pixel coordinates). Everything loads from this origin: CSP img-src
// and media-src 'self'. Results from an external engine may have another shape: what is not
// recognised is left to the JSON below.
import { el, svgEl as svg, time } from './common.js';

const number = new Intl.NumberFormat();

/** 1536 → "1.5 KB". */
function fileSize(bytes) {
  if (bytes < 1024) return `${bytes} bytes`;
  const units = ['KB', 'MB', 'GB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

const isNumber = (v) => typeof v === 'number' && Number.isFinite(v);

function facts(rows) {
  const shown = rows.filter(([, value]) => value !== null && value !== undefined);
  if (shown.length === 0) return null;
  return el('dl', { class: 'summary facts' }, shown.flatMap(([term, value]) => [el('dt', { text: term }), el('dd', {}, value)]));
}

/** The file, one way or another: thumbnail, player, or a link. */
function filePreview(file) {
  const open = el('a', { href: file.url, target: '_blank', rel: 'noopener' }, file.name);
  const caption = el('figcaption', {}, open, ` · ${file.content_type} · ${fileSize(file.size)}`);
  if (file.content_type.startsWith('image/')) {
    // The thumbnail is a link: a click opens the full-size image in a new tab.
    const thumb = el(
      'a',
      { href: file.url, target: '_blank', rel: 'noopener', class: 'thumb', title: `Open ${file.name} full size` },
      el('img', { src: file.url, alt: `Output image ${file.name}`, loading: 'lazy', decoding: 'async' }),
    );
    return el('figure', { class: 'preview' }, thumb, caption);
  }
  if (file.content_type.startsWith('video/')) {
    return el(
      'figure',
      { class: 'preview' },
      el('video', { src: file.url, controls: true, preload: 'metadata', playsinline: true, 'aria-label': `Output video ${file.name}` }, el('a', { href: file.url, text: `Download ${file.name}` })),
      caption,
    );
  }
  return el('figure', { class: 'preview file-only' }, caption);
}

/** The Files section: every output file, or why there is none. */
export function renderFiles(task) {
  if (task.files.length) return el('div', { class: 'previews' }, task.files.map(filePreview));
  // Retention (RETENTION_DAYS) deleted them: say so rather than "No files.".
  if (task.files_expired_at) return el('p', { class: 'muted' }, ['Files expired: deleted ', time(task.files_expired_at), '.']);
  if (task.status === 0 || task.status === 10) return el('p', { class: 'muted', text: 'No files yet: they appear here when the task completes.' });
  if (task.kind === 'face-detection' && task.status === 20) return el('p', { class: 'muted', text: 'No files: face detection answers with coordinates, shown above.' });
  return el('p', { class: 'muted', text: 'No files.' });
}

/** Valid face boxes of a face-detection result (`face_coordinates`), in image pixels. */
function facesOf(result) {
  const faces = result && Array.isArray(result.face_coordinates) ? result.face_coordinates : null;
  if (!faces) return null;
  return faces.filter((f) => f && isNumber(f.x) && isNumber(f.y) && isNumber(f.width) && isNumber(f.height) && f.width > 0 && f.height > 0);
}

/**
 * The faces drawn on an SVG whose user space is the image's pixels (`width` × `height`), so the boxes
 * need no arithmetic of ours to follow the image's displayed size. Strokes keep a constant screen
 * width; labels scale with the image, sized for its longest side.
 */
function faceBoxes(faces, width, height) {
  const label = Math.max(10, Math.round(Math.max(width, height) / 28));
  return svg(
    'svg',
    { class: 'face-boxes', viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'none', 'aria-hidden': 'true' },
    ...faces.map((f, i) =>
      svg(
        'g',
        { class: 'face', 'data-index': i + 1 },
        svg('rect', { class: 'face-box', x: f.x, y: f.y, width: f.width, height: f.height, 'vector-effect': 'non-scaling-stroke' }),
        svg('rect', { class: 'face-tag', x: f.x, y: Math.max(0, f.y - label * 1.3), width: label * (String(i + 1).length * 0.7 + 0.8), height: label * 1.3 }),
        svg('text', { class: 'face-label', x: f.x + label * 0.4, y: Math.max(0, f.y - label * 1.3) + label, 'font-size': label, text: String(i + 1) }),
      ),
    ),
  );
}

function facesTable(faces) {
  return el(
    'div',
    { class: 'table-wrap' },
    el(
      'table',
      { class: 'data faces-table' },
      el('caption', { class: 'visually-hidden', text: 'Detected faces, best score first' }),
      el('thead', {}, el('tr', {}, ['Face', 'Score', 'x', 'y', 'Width', 'Height'].map((h) => el('th', { scope: 'col', text: h })))),
      el(
        'tbody',
        {},
        faces.map((f, i) =>
          el(
            'tr',
            {},
            [String(i + 1), isNumber(f.score) ? f.score.toFixed(3) : '—', f.x, f.y, f.width, f.height].map((v, c) =>
              el('td', { dataset: { label: ['Face', 'Score', 'x', 'y', 'Width', 'Height'][c] }, text: String(v) }),
            ),
          ),
        ),
      ),
    ),
  );
}

/**
 * Face detection: the uploaded input image (served by the console's input route) with the boxes over
 * it, once the image has loaded and its pixel size is known. An `image_url` input lives on another
 * site, which the console does not load from: the boxes go on a blank frame reaching the faces' extent.
 */
function faceDetection(task) {
  const faces = facesOf(task.result);
  if (!faces) return null;
  const count = faces.length === 1 ? '1 face' : `${number.format(faces.length)} faces`;
  const summary = facts([['Faces found', number.format(faces.length)]]);
  const uploaded = task.input && task.input.image_upload;
  let figure;
  if (uploaded && !task.files_expired_at) {
    const img = el('img', { src: `/api/console/tasks/${encodeURIComponent(task.public_id)}/input`, alt: `Input image with ${count} outlined`, class: 'face-image' });
    const stage = el('div', { class: 'face-stage' }, img);
    const place = () => {
      stage.querySelector('.face-boxes')?.remove();
      stage.append(faceBoxes(faces, img.naturalWidth, img.naturalHeight));
      stage.dataset.ready = 'true';
    };
    if (img.complete && img.naturalWidth) place();
    else img.addEventListener('load', place, { once: true });
    img.addEventListener('error', () => stage.replaceWith(el('p', { class: 'error', text: 'The input image could not be loaded.' })), { once: true });
    figure = el('figure', { class: 'faces-figure' }, stage, el('figcaption', { class: 'muted', text: `The uploaded image, ${count} outlined and numbered best score first.` }));
  } else if (faces.length) {
    const width = Math.max(...faces.map((f) => f.x + f.width));
    const height = Math.max(...faces.map((f) => f.y + f.height));
    const why = task.files_expired_at
      ? 'The input image was deleted with the task\'s files, so the boxes are drawn on a blank frame (to scale).'
      : 'The input image is on another site, which the console does not load from, so the boxes are drawn on a blank frame (to scale).';
    figure = el(
      'figure',
      { class: 'faces-figure' },
      el('div', { class: 'face-stage blank', dataset: { ready: 'true' } }, faceBoxes(faces, width, height)),
      el('figcaption', { class: 'muted' }, why, task.input?.image_url ? [' Image: ', el('span', { class: 'mono url', text: task.input.image_url })] : null),
    );
  }
  return el('div', {}, summary, faces.length ? [figure, facesTable(faces)] : el('p', { class: 'muted', text: 'No faces were found in the image.' }));
}

function imageGeneration(task) {
  const r = task.result || {};
  return facts([
    ['Size', isNumber(r.width) && isNumber(r.height) ? `${r.width} × ${r.height} px` : null],
    ['Prompt', typeof task.input?.prompt === 'string' ? el('span', { class: 'prompt', text: task.input.prompt }) : null],
  ]);
}

function videoGeneration(task) {
  const r = task.result || {};
  return facts([
    ['Length', isNumber(r.duration_seconds) ? `${r.duration_seconds} s` : null],
    ['Frames', isNumber(r.frames) ? `${number.format(r.frames)}${isNumber(r.fps) ? ` at ${r.fps} fps` : ''}` : null],
    ['Size', isNumber(r.width) && isNumber(r.height) ? `${r.width} × ${r.height} px` : null],
    ['Format', typeof r.format === 'string' ? r.format.toUpperCase() : null],
    ['Prompt', typeof task.input?.prompt === 'string' ? el('span', { class: 'prompt', text: task.input.prompt }) : null],
  ]);
}

const BY_KIND = { 'image-generation': imageGeneration, 'video-generation': videoGeneration, 'face-detection': faceDetection };

/** The Result section: what the task produced, or where it stands. */
export function renderOutput(task) {
  if (task.status === 0) return el('p', { class: 'muted', text: 'Queued: the result appears here when the task completes. Refresh to check.' });
  if (task.status === 10) return el('p', { class: 'muted', text: 'Processing: the result appears here when the task completes. Refresh to check.' });
  if (task.status === 40) return el('p', { class: 'muted', text: 'Cancelled before it finished: no result, and its cost was refunded.' });
  if (task.status === 30) {
    return el(
      'div',
      { class: 'failure', role: 'group', 'aria-label': 'Failure' },
      el('p', {}, el('strong', { text: 'Failed. ' }), task.error_message || 'The task could not be completed.'),
      el('p', { class: 'muted' }, 'Error code ', el('code', { text: task.error_code || 'unknown' }), '. Its cost was refunded.'),
    );
  }
  const rendered = BY_KIND[task.kind]?.(task);
  return rendered ?? el('p', { class: 'muted', text: 'The result is shown as JSON below.' });
}
