/* TFLITE_DETECTION_POSTPROCESS (ops/detection_postprocess.cc states the semantics): box decoding
 * against anchors, then fast (best class per box) or regular (per class) non-maximum suppression.
 * Portable C99 that is also valid C++: the runtime's op runs this very text, and weft aot writes it
 * into modules, so both give the same detections. Every buffer comes from the caller (scratch of
 * weft_detpp_scratch_bytes), nothing is allocated. */

/* @helper weft_detection_postprocess */
typedef struct {
  int64_t n, cb, num_classes, enc_len; /* boxes, score columns (classes + background?), classes, values per encoding */
  int64_t max_det, max_cls, per_class;
  int32_t regular;
  float score_thr, iou_thr;
  double ys, xs, hs, ws;
} weft_detpp_params;

static int64_t weft_detpp_align8(int64_t b) { return (b + 7) / 8 * 8; }

static float weft_detpp_iou(const float* a, const float* b) {
  const float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
  float h, w, inter;
  if (area_a <= 0 || area_b <= 0) return 0.f;
  h = (a[2] < b[2] ? a[2] : b[2]) - (a[0] > b[0] ? a[0] : b[0]);
  w = (a[3] < b[3] ? a[3] : b[3]) - (a[1] > b[1] ? a[1] : b[1]);
  inter = (h > 0.f ? h : 0.f) * (w > 0.f ? w : 0.f);
  return inter / (area_a + area_b - inter);
}

/* Sorts idx[0..n) by key[idx] decreasing; equal keys keep their order (a bottom-up merge sort). */
static void weft_detpp_sort(int32_t* idx, int32_t* tmp, int64_t n, const float* key) {
  int64_t width, lo, i;
  for (width = 1; width < n; width *= 2) {
    for (lo = 0; lo < n; lo += 2 * width) {
      const int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
      int64_t a = lo, b = mid, o = lo;
      while (a < mid && b < hi) tmp[o++] = key[idx[b]] > key[idx[a]] ? idx[b++] : idx[a++];
      while (a < mid) tmp[o++] = idx[a++];
      while (b < hi) tmp[o++] = idx[b++];
    }
    for (i = 0; i < n; ++i) idx[i] = tmp[i];
  }
}

/* The heap of weft_detpp_top: `a` before `b` when key[a] > key[b]; the root is the kept entry that
 * ranks last. Moves the hole at `hole` down to a leaf along the children that rank last, then lets
 * `value` rise from there. */
static void weft_detpp_heap_adjust(int32_t* h, int64_t hole, int64_t len, int32_t value, const float* key) {
  const int64_t top = hole;
  int64_t child = hole, parent;
  while (child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (key[h[child]] > key[h[child - 1]]) --child;
    h[hole] = h[child];
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    h[hole] = h[child - 1];
    hole = child - 1;
  }
  parent = (hole - 1) / 2;
  while (hole > top && key[h[parent]] > key[value]) {
    h[hole] = h[parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  h[hole] = value;
}

/* Puts the k highest-keyed of idx[0..n) in idx[0..k), highest first: a heap of the first k, each
 * later entry that ranks above its root replacing the root, then the heap taken apart. Entries with
 * equal keys come out in the order this selection gives them, which is the LiteRT interpreter's
 * for a box's classes (a stable sort orders ties differently). O(n log k). */
static void weft_detpp_top(int32_t* idx, int64_t n, int64_t k, const float* key) {
  int64_t i, last;
  int32_t v;
  if (k > n) k = n;
  for (i = k >= 2 ? (k - 2) / 2 : -1; i >= 0; --i) weft_detpp_heap_adjust(idx, i, k, idx[i], key);
  for (i = k; i < n; ++i)
    if (key[idx[i]] > key[idx[0]]) {
      v = idx[i];
      idx[i] = idx[0];
      weft_detpp_heap_adjust(idx, 0, k, v, key);
    }
  for (last = k - 1; last > 0; --last) {
    v = idx[last];
    idx[last] = idx[0];
    weft_detpp_heap_adjust(idx, 0, last, v, key);
  }
}

/* Greedy suppression over score[k * stride] for box k: the kept boxes, best first; returns how many. */
static int64_t weft_detpp_nms(const weft_detpp_params* p, const float* boxes, const float* score, int64_t stride, int64_t limit,
                              float* key, int32_t* cand, int32_t* tmp, uint8_t* active, int32_t* kept) {
  int64_t count = 0, i, j, nk = 0;
  for (i = 0; i < p->n; ++i) {
    key[i] = score[i * stride];
    if (key[i] >= p->score_thr) cand[count++] = (int32_t)i;
  }
  weft_detpp_sort(cand, tmp, count, key);
  if (limit > count) limit = count;
  for (i = 0; i < count; ++i) active[i] = 1;
  for (i = 0; i < count && nk < limit; ++i) {
    if (!active[i]) continue;
    kept[nk++] = cand[i];
    for (j = i + 1; j < count; ++j)
      if (active[j] && weft_detpp_iou(boxes + 4 * cand[i], boxes + 4 * cand[j]) > p->iou_thr) active[j] = 0;
  }
  return nk;
}

/* enc [n, enc_len], scores [n, cb], anchors [n, 4] as float; outputs [D, 4], [D], [D], [1] with
 * D = max_det * max_cls. Returns 0, or 1 when a box decodes with its minimum past its maximum. */
static int32_t weft_detpp_run(const weft_detpp_params* p, const float* enc, const float* scores, const float* anchors, float* out_boxes,
                              float* out_classes, float* out_scores, float* out_num, void* scratch) {
  const int64_t per_box = p->max_cls < p->num_classes ? p->max_cls : p->num_classes;
  const int64_t list = p->max_det + p->per_class, m = p->n > list ? p->n : list, offset = p->cb - p->num_classes;
  const int64_t rows = p->max_det * p->max_cls;
  uint8_t* s = (uint8_t*)scratch;
  float* boxes = (float*)(void*)s;
  float* key = (float*)(void*)(s += weft_detpp_align8(4 * p->n * 4));
  int32_t* cand = (int32_t*)(void*)(s += weft_detpp_align8(4 * m));
  int32_t* tmp = (int32_t*)(void*)(s += weft_detpp_align8(4 * m));
  int32_t* kept = (int32_t*)(void*)(s += weft_detpp_align8(4 * m));
  uint8_t* active = (s += weft_detpp_align8(4 * m));
  int32_t* top = (int32_t*)(void*)(s += weft_detpp_align8(p->n));
  int32_t* best_box = (int32_t*)(void*)(s += weft_detpp_align8(4 * p->n * per_box));
  int32_t* best_cls = (int32_t*)(void*)(s += weft_detpp_align8(4 * list));
  float* best_sc = (float*)(void*)(s += weft_detpp_align8(4 * list));
  int32_t* order = (int32_t*)(void*)(s += weft_detpp_align8(4 * list));
  int32_t* cls_idx = (int32_t*)(void*)(s += weft_detpp_align8(4 * list));
  int64_t i, c, k, kept_n, count = 0;
  for (i = 0; i < p->n; ++i) {
    const float* b = enc + i * p->enc_len;
    const float* a = anchors + 4 * i;
    const float yc = (float)((double)b[0] / p->ys * (double)a[2] + (double)a[0]);
    const float xc = (float)((double)b[1] / p->xs * (double)a[3] + (double)a[1]);
    const float hh = (float)(0.5 * exp((double)b[2] / p->hs) * (double)a[2]);
    const float hw = (float)(0.5 * exp((double)b[3] / p->ws) * (double)a[3]);
    float* o = boxes + 4 * i;
    o[0] = yc - hh, o[1] = xc - hw, o[2] = yc + hh, o[3] = xc + hw;
    if (o[0] > o[2] || o[1] > o[3]) return 1;
  }
  for (i = 0; i < rows; ++i) out_boxes[4 * i] = out_boxes[4 * i + 1] = out_boxes[4 * i + 2] = out_boxes[4 * i + 3] = out_classes[i] = out_scores[i] = 0.f;
  if (!p->regular) {
    for (i = 0; i < p->n; ++i) { /* each box's best classes, best first (one: the first of the highest) */
      const float* row = scores + i * p->cb + offset;
      int32_t* t = top + i * per_box;
      if (per_box == 1) {
        int64_t best = 0, j;
        for (j = 1; j < p->num_classes; ++j)
          if (row[j] > row[best]) best = j;
        t[0] = (int32_t)best;
      } else { /* the best per_box classes: O(C log per_box) per box */
        for (c = 0; c < p->num_classes; ++c) cls_idx[c] = (int32_t)c;
        weft_detpp_top(cls_idx, p->num_classes, per_box, row);
        for (c = 0; c < per_box; ++c) t[c] = cls_idx[c];
      }
      key[i] = row[t[0]];
    }
    /* the row maxima are in key[], which weft_detpp_nms reads through `score` (stride 1) as it fills it */
    kept_n = weft_detpp_nms(p, boxes, key, 1, p->max_det, key, cand, tmp, active, kept);
    for (k = 0; k < kept_n; ++k)
      for (c = 0; c < per_box; ++c) {
        const int64_t r = k * p->max_cls + c, box = kept[k], cls = top[box * per_box + c];
        for (i = 0; i < 4; ++i) out_boxes[4 * r + i] = boxes[4 * box + i];
        out_classes[r] = (float)cls;
        out_scores[r] = scores[box * p->cb + offset + cls];
      }
    *out_num = (float)kept_n;
    return 0;
  }
  for (c = 0; c < p->num_classes; ++c) { /* per class, then the best max_det of all kept so far */
    kept_n = weft_detpp_nms(p, boxes, scores + offset + c, p->cb, p->per_class, key, cand, tmp, active, kept);
    for (k = 0; k < kept_n; ++k) {
      best_box[count] = kept[k];
      best_cls[count] = (int32_t)c;
      best_sc[count] = scores[kept[k] * p->cb + offset + c];
      ++count;
    }
    for (k = 0; k < count; ++k) order[k] = (int32_t)k;
    weft_detpp_sort(order, tmp, count, best_sc);
    if (count > p->max_det) count = p->max_det;
    for (k = 0; k < count; ++k) { /* gather in order: through cand, key and kept as temporaries */
      cand[k] = best_box[order[k]];
      kept[k] = best_cls[order[k]];
      key[k] = best_sc[order[k]];
    }
    for (k = 0; k < count; ++k) best_box[k] = cand[k], best_cls[k] = kept[k], best_sc[k] = key[k];
  }
  for (k = 0; k < count; ++k) {
    for (i = 0; i < 4; ++i) out_boxes[4 * k + i] = boxes[4 * best_box[k] + i];
    out_classes[k] = (float)best_cls[k];
    out_scores[k] = best_sc[k];
  }
  *out_num = (float)count;
  return 0;
}

/* @helper weft_detpp_scratch (the runtime and the emitter size the scratch with it; modules do not need it) */
/* Scratch bytes weft_detpp_run needs. */
static int64_t weft_detpp_scratch_bytes(const weft_detpp_params* p) {
  const int64_t per_box = p->max_cls < p->num_classes ? p->max_cls : p->num_classes;
  const int64_t list = p->max_det + p->per_class;
  const int64_t m = p->n > list ? p->n : list;
  return weft_detpp_align8(4 * p->n * 4) + weft_detpp_align8(4 * m) /* key */ + 3 * weft_detpp_align8(4 * m) /* cand, tmp, kept */ +
         weft_detpp_align8(p->n) /* active */ + weft_detpp_align8(4 * p->n * per_box) /* top classes */ +
         4 * weft_detpp_align8(4 * list) /* regular: boxes, classes, scores, order */ +
         weft_detpp_align8(4 * p->num_classes) /* fast, several classes per box: the classes' order */;
}
