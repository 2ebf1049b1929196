/* SVG figures for the command's plots (cli/plot.h): panels with ticked axes, series clipped to
 * their frame, bands under the lines, and one legend beside the panels. Colours are Okabe and
 * Ito's colour-blind safe set (its yellow, unreadable on white, left out), then three dark ones
 * of Paul Tol's set, so ten series (strategy-bench's nine and its baseline) differ in colour;
 * every series also gets its own dash and marker, so curves that overlap, or a print in grey,
 * stay apart. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/plot.h"

static const char *const palette[] = {"#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7",
                                      "#56B4E9", "#000000", "#882255", "#999933", "#332288"};
enum { N_COLORS = 10, N_DASHES = 4, N_MARKERS = 6, MAX_TICKS = 64, MAX_LEGEND = 64 };
static const char *const dashes[] = {"", "7 3", "2 2.5", "9 3 2 3"};
static const char *const grey = "#b8b8b8";
#define CHAR_W 6.6 /* average width of a 12 px sans-serif character, for layout */

/* Where a panel's data lands: data (log10 on log axes) to pixels. */
typedef struct frame {
  double x0, x1, y0, y1; /* data range, log10 on log axes */
  double l, r, t, b;     /* pixels */
  int xlog, ylog;
} frame;

/* The figure's legend: one slot per series name, in order of first appearance. */
typedef struct legend {
  int n;
  const plot_series *s[MAX_LEGEND];
} legend;

static int legend_slot(legend *g, const plot_series *s) {
  if (!s->name) return -1;
  for (int i = 0; i < g->n; i++)
    if (strcmp(g->s[i]->name, s->name) == 0) return i;
  if (g->n == MAX_LEGEND) return -1;
  g->s[g->n] = s;
  return g->n++;
}

static void xml_text(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '\'': fputs("&apos;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*s, f);
    }
  }
}

/* One text element; anchor "start", "middle" or "end"; rotate in degrees. */
static void text(FILE *f, double x, double y, int size, const char *anchor, double rotate, const char *s) {
  fprintf(f, "<text x='%.1f' y='%.1f' font-size='%d' text-anchor='%s'", x, y, size, anchor);
  if (rotate != 0) fprintf(f, " transform='rotate(%.0f %.1f %.1f)'", rotate, x, y);
  fputc('>', f);
  xml_text(f, s);
  fputs("</text>\n", f);
}

static double clamp_px(double v) { return fmax(-1e4, fmin(1e4, v)); }

/* Pixel of a data value on an axis; NAN where it cannot be drawn (not finite, <= 0 on log). */
static double to_px(double v, int log, double d0, double d1, double p0, double p1) {
  if (!isfinite(v) || (log && v <= 0)) return NAN;
  if (log) v = log10(v);
  return clamp_px(p0 + (v - d0) / (d1 - d0) * (p1 - p0));
}
static double fx(const frame *fr, double v) { return to_px(v, fr->xlog, fr->x0, fr->x1, fr->l, fr->r); }
static double fy(const frame *fr, double v) { return to_px(v, fr->ylog, fr->y0, fr->y1, fr->b, fr->t); }

static const char *series_color(const plot_series *s, int slot) {
  if (s->color == PLOT_GREY || (s->color == PLOT_AUTO && slot < 0)) return grey;
  return palette[(s->color == PLOT_AUTO ? slot : s->color) % N_COLORS];
}
static const char *series_dash(const plot_series *s, int slot) {
  if (s->dash >= 0) return dashes[s->dash % N_DASHES];
  return slot < 0 ? "" : dashes[slot % N_DASHES];
}
static int series_marker(const plot_series *s, int slot) {
  if (s->marker == PLOT_NONE) return -1;
  if (s->marker >= 0) return s->marker % N_MARKERS;
  return slot < 0 ? -1 : slot % N_MARKERS;
}

/* Marker shapes: circle, square, triangle up, diamond, triangle down, cross. */
static void marker(FILE *f, int m, double x, double y, double r, const char *color, double opacity) {
  if (m < 0 || isnan(x) || isnan(y)) return;
  const char *paint = "fill='%s' fill-opacity='%.2f' stroke='%s' stroke-width='0.8'";
  char style[160];
  snprintf(style, sizeof style, paint, color, opacity, color);
  switch (m) {
  case 0: fprintf(f, "<circle cx='%.1f' cy='%.1f' r='%.1f' %s/>\n", x, y, r, style); break;
  case 1: fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' %s/>\n", x - r * .85, y - r * .85, r * 1.7, r * 1.7, style); break;
  case 2: fprintf(f, "<path d='M%.1f %.1fl%.1f %.1fh%.1fz' %s/>\n", x, y - r * 1.1, r, r * 1.8, -2 * r, style); break;
  case 3: fprintf(f, "<path d='M%.1f %.1fl%.1f %.1fl%.1f %.1fl%.1f %.1fz' %s/>\n", x, y - r * 1.2, r, r * 1.2, -r, r * 1.2, -r, -r * 1.2, style); break;
  case 4: fprintf(f, "<path d='M%.1f %.1fl%.1f %.1fh%.1fz' %s/>\n", x, y + r * 1.1, r, -r * 1.8, -2 * r, style); break;
  default:
    fprintf(f, "<path d='M%.1f %.1fl%.1f %.1fm0 %.1fl%.1f %.1f' stroke='%s' stroke-width='1.6'/>\n", x - r, y - r, 2 * r,
            2 * r, -2 * r, -2 * r, 2 * r, color);
  }
}

/* ---- ranges and axes ---- */

static int usable(double v, int log) { return isfinite(v) && (!log || v > 0); }

/* The data range of an axis over the series (bands do not widen it: a wide band is clipped). */
static void data_range(const plot_panel *p, int y, double *lo, double *hi) {
  int log = y ? p->y.log : p->x.log;
  *lo = INFINITY, *hi = -INFINITY;
  for (int k = 0; k < p->n_series; k++) {
    const plot_series *s = &p->series[k];
    if ((y && s->style == PLOT_RUG) || s->style == PLOT_BAND) continue;
    if (!y && s->style == PLOT_BARS) continue;
    const double *v = y ? s->y : s->x;
    for (int i = 0; v && i < s->n; i++)
      if (usable(v[i], log)) *lo = fmin(*lo, v[i]), *hi = fmax(*hi, v[i]);
    if (y && s->style == PLOT_BARS && !log) *lo = fmin(*lo, 0);
  }
}

static void axis_range(const plot_panel *p, int y, double *lo, double *hi) {
  const plot_axis *a = y ? &p->y : &p->x;
  if (!y && p->n_categories > 0) {
    *lo = -0.5, *hi = p->n_categories - 0.5;
    return;
  }
  data_range(p, y, lo, hi);
  if (!isnan(a->lo)) *lo = a->lo;
  if (!isnan(a->hi)) *hi = a->hi;
  if (isnan(a->lo) || isnan(a->hi)) { /* from the data: widened to ticks, the given end kept */
    double l = *lo, h = p->n_categories > 0 ? *hi * (a->log ? 1.6 : 1.1) : *hi; /* room for the bars' values */
    plot_nice_range(&l, &h, a->log);
    if (isnan(a->lo)) *lo = l;
    if (isnan(a->hi)) *hi = h;
  }
  if (!(*hi > *lo)) plot_nice_range(lo, hi, a->log);
}

/* Grid lines, tick marks and labels of one axis. */
static void axis_ticks(FILE *f, const frame *fr, int y, double lo, double hi, int log) {
  double t[MAX_TICKS], m[MAX_TICKS];
  int n = plot_ticks(lo, hi, log, t, MAX_TICKS), nm = log ? plot_minor_ticks(lo, hi, m, MAX_TICKS) : 0;
  for (int i = 0; i < nm; i++) {
    double p = y ? fy(fr, m[i]) : fx(fr, m[i]);
    if (y) fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#555'/>\n", fr->l, fr->l + 3, p, p);
    else fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#555'/>\n", p, p, fr->b, fr->b - 3);
  }
  for (int i = 0; i < n; i++) {
    char label[32];
    plot_tick_label(t[i], t, n, log, label, sizeof label);
    double p = y ? fy(fr, t[i]) : fx(fr, t[i]);
    if (y) {
      fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#e4e4e4'/>\n", fr->l, fr->r, p, p);
      fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#555'/>\n", fr->l - 4, fr->l, p, p);
      text(f, fr->l - 6, p + 4, 11, "end", 0, label);
    } else {
      fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#e4e4e4'/>\n", p, p, fr->t, fr->b);
      fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#555'/>\n", p, p, fr->b, fr->b + 4);
      text(f, p, fr->b + 16, 11, "middle", 0, label);
    }
  }
}

/* The category axis of a bar chart: each name under its bars, and brackets naming the groups. */
static void category_axis(FILE *f, const frame *fr, const plot_panel *p, double label_h, int rotate) {
  for (int i = 0; i < p->n_categories; i++) {
    double x = fx(fr, i);
    fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#555'/>\n", x, x, fr->b, fr->b + 4);
    if (rotate) text(f, x + 3, fr->b + 12, 11, "end", -40, p->categories[i]);
    else text(f, x, fr->b + 16, 11, "middle", 0, p->categories[i]);
  }
  for (int i = 0, j; p->groups && i < p->n_categories; i = j) {
    for (j = i + 1; j < p->n_categories && strcmp(p->groups[j], p->groups[i]) == 0;) j++;
    double a = fx(fr, i - 0.45), b = fx(fr, j - 0.55), y = fr->b + label_h + 4;
    fprintf(f, "<path d='M%.1f %.1fv4H%.1fv-4' fill='none' stroke='#555'/>\n", a, y - 4, b);
    text(f, (a + b) / 2, y + 14, 12, "middle", 0, p->groups[i]);
    if (i > 0)
      fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='#999' stroke-dasharray='3 3'/>\n",
              fx(fr, i - 0.5), fx(fr, i - 0.5), fr->t, fr->b);
  }
}

/* ---- series ---- */

/* A band lo..hi as one polygon per run of drawable points. */
static void draw_band(FILE *f, const frame *fr, const plot_series *s, const char *color) {
  for (int i = 0; i < s->n;) {
    while (i < s->n && (isnan(fx(fr, s->x[i])) || isnan(fy(fr, s->lo[i])) || isnan(fy(fr, s->hi[i])))) i++;
    int j = i;
    while (j < s->n && !isnan(fx(fr, s->x[j])) && !isnan(fy(fr, s->lo[j])) && !isnan(fy(fr, s->hi[j]))) j++;
    if (j - i >= 2) {
      fprintf(f, "<polygon fill='%s' fill-opacity='0.16' stroke='none' points='", color);
      for (int k = i; k < j; k++) fprintf(f, "%.1f,%.1f ", fx(fr, s->x[k]), fy(fr, s->hi[k]));
      for (int k = j - 1; k >= i; k--) fprintf(f, "%.1f,%.1f ", fx(fr, s->x[k]), fy(fr, s->lo[k]));
      fputs("'/>\n", f);
    }
    i = j;
  }
}

/* A line (or step line) broken where a point cannot be drawn. */
static void draw_line(FILE *f, const frame *fr, const plot_series *s, const char *color, const char *dash) {
  fprintf(f, "<path fill='none' stroke='%s' stroke-width='%.1f' stroke-linejoin='round'", color,
          s->width > 0 ? s->width : 1.8);
  if (*dash) fprintf(f, " stroke-dasharray='%s'", dash);
  fputs(" d='", f);
  int pen = 0;
  for (int i = 0; i < s->n; i++) {
    double x = fx(fr, s->x[i]), y = fy(fr, s->y[i]);
    if (isnan(x) || isnan(y)) {
      pen = 0;
      continue;
    }
    if (pen && s->style == PLOT_STEP) fprintf(f, "H%.1fV%.1f", x, y);
    else fprintf(f, "%c%.1f %.1f", pen ? 'L' : 'M', x, y);
    pen = 1;
  }
  if (pen && s->style == PLOT_STEP) fprintf(f, "H%.1f", fr->r); /* the best holds to the end */
  fputs("'/>\n", f);
}

/* Bar j of nb in each category; few bars get their value written over them. */
static void draw_bars(FILE *f, const frame *fr, const plot_series *s, const char *color, int j, int nb) {
  double w = 0.8 / nb, base = fr->ylog ? fr->b : fy(fr, 0);
  for (int i = 0; i < s->n; i++) {
    double y = fy(fr, s->y[i]), a = fx(fr, i - 0.4 + j * w), b = fx(fr, i - 0.4 + (j + 1) * w);
    if (isnan(y)) continue;
    fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='%s' stroke='white' stroke-width='0.5'/>\n", a,
            fmin(y, base), b - a, fabs(base - y), color);
    if (s->n * nb > 12) continue;
    char v[32];
    snprintf(v, sizeof v, s->y[i] >= 100 ? "%.0f" : "%.3g", s->y[i]);
    text(f, (a + b) / 2, fmin(y, base) - 4, 11, "middle", 0, v);
  }
}

/* Markers go over the clipped lines, whole, where their centre lies in the frame. */
static void draw_markers(FILE *f, const frame *fr, const plot_series *s, int slot) {
  int m = series_marker(s, slot);
  if (m < 0 || (s->style != PLOT_LINE && s->style != PLOT_POINTS)) return;
  int every = s->style == PLOT_POINTS ? 1 : s->n > 10 ? s->n / 8 : 1, start = slot > 0 ? slot * every / 7 : 0;
  for (int i = start; i < s->n; i += every) {
    double x = fx(fr, s->x[i]), y = fy(fr, s->y[i]);
    if (x >= fr->l - 0.5 && x <= fr->r + 0.5 && y >= fr->t - 0.5 && y <= fr->b + 0.5)
      marker(f, m, x, y, s->style == PLOT_POINTS ? 3 : 3.5, series_color(s, slot), s->style == PLOT_POINTS ? 0.45 : 1);
  }
}

static void draw_series(FILE *f, const frame *fr, const plot_series *s, int slot, int bar_j, int n_bars) {
  const char *color = series_color(s, slot);
  if (s->style == PLOT_BARS) return draw_bars(f, fr, s, color, bar_j, n_bars);
  if (s->style == PLOT_RUG) {
    for (int i = 0; i < s->n; i++)
      if (!isnan(fx(fr, s->x[i]))) fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='%s' stroke-width='2'/>\n",
                                           fx(fr, s->x[i]), fx(fr, s->x[i]), fr->b, fr->b - 12, color);
    return;
  }
  if (s->style == PLOT_LINE || s->style == PLOT_STEP) draw_line(f, fr, s, color, series_dash(s, slot));
}

/* Bands first (under every line), then bars, lines and rugs, clipped to the frame; markers last. */
static void panel_series(FILE *f, const frame *fr, const plot_panel *p, legend *g, int clip) {
  fprintf(f, "<clipPath id='c%d'><rect x='%.1f' y='%.1f' width='%.1f' height='%.1f'/></clipPath>\n<g clip-path='url(#c%d)'>\n",
          clip, fr->l, fr->t, fr->r - fr->l, fr->b - fr->t, clip);
  int n_bars = 0, bar_j = 0;
  for (int k = 0; k < p->n_series; k++) n_bars += p->series[k].style == PLOT_BARS;
  for (int k = 0; k < p->n_series; k++) {
    const plot_series *s = &p->series[k];
    if (s->lo && s->hi && s->x) draw_band(f, fr, s, series_color(s, legend_slot(g, s)));
  }
  for (int k = 0; k < p->n_series; k++) {
    const plot_series *s = &p->series[k];
    if (s->style != PLOT_BAND) draw_series(f, fr, s, legend_slot(g, s), bar_j, n_bars);
    bar_j += s->style == PLOT_BARS;
  }
  fputs("</g>\n", f);
  for (int k = 0; k < p->n_series; k++) draw_markers(f, fr, &p->series[k], legend_slot(g, &p->series[k]));
}

/* ---- layout ---- */

typedef struct layout {
  double panel_w, panel_h, top, legend_w, width, height;
  double ml, mr, mt, mb; /* a frame's margins inside its panel */
  double cat_label_h;    /* category names, rotated or not */
  int rotate;
  int note_lines;
} layout;

static size_t longest(const char *const *s, int n) {
  size_t m = 0;
  for (int i = 0; s && i < n; i++) m = s[i] && strlen(s[i]) > m ? strlen(s[i]) : m;
  return m;
}

static void plan(const plot_figure *fig, legend *g, layout *L) {
  int cols = fig->cols > 0 ? fig->cols : 1, rows = (fig->n_panels + cols - 1) / cols;
  const char *names[MAX_LEGEND];
  for (int i = 0; i < fig->n_panels; i++)
    for (int k = 0; k < fig->panels[i].n_series; k++) legend_slot(g, &fig->panels[i].series[k]);
  for (int i = 0; i < g->n; i++) names[i] = g->s[i]->name;
  L->legend_w = g->n ? 48 + CHAR_W * (double)longest(names, g->n) : 0;
  int single = fig->n_panels == 1, grouped = 0, n_cat = 0;
  size_t cat = 0;
  for (int i = 0; i < fig->n_panels; i++) {
    cat = fmax(cat, longest(fig->panels[i].categories, fig->panels[i].n_categories));
    grouped |= fig->panels[i].groups != NULL;
    n_cat = fig->panels[i].n_categories > n_cat ? fig->panels[i].n_categories : n_cat;
  }
  L->ml = 66, L->mr = 14, L->mt = single ? 8 : 24;
  double avail = fig->width > 0 ? fig->width : single ? 760 : 360 * cols + L->legend_w;
  L->panel_w = (avail - L->legend_w) / cols;
  const plot_panel *p0 = &fig->panels[0];
  if (single && p0->n_categories > 0 && fig->width <= 0) /* about 18 px a bar */
    L->panel_w = L->ml + L->mr + fmax(220, p0->n_categories * (18.0 * p0->n_series + 16));
  /* category names turn 40 degrees when they are wider than their share of the axis */
  L->rotate = cat && CHAR_W * 0.9 * (double)cat > (L->panel_w - L->ml - L->mr) / n_cat - 4;
  L->cat_label_h = !cat ? 0 : L->rotate ? 14 + 0.64 * CHAR_W * (double)cat : 18;
  L->mb = (cat ? L->cat_label_h + (grouped ? 26 : 0) : 24) + 26;
  L->panel_h = (single ? 360 : 300) + L->mb - 50;
  L->top = fig->title ? 36 : 10;
  L->width = L->panel_w * cols + L->legend_w + 6;
  L->note_lines = 0;
  for (const char *s = fig->note; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : "") L->note_lines++;
  L->height = fmax(L->top + rows * L->panel_h, L->top + 24 + 18.0 * g->n) + 18.0 * L->note_lines + 8;
}

/* labels: bit 0 the x axis's label, bit 1 the y axis's (a grid labels its outer panels only). */
static void draw_panel(FILE *f, const plot_panel *p, const layout *L, double x, double y, legend *g, int index,
                       int labels) {
  frame fr = {0};
  double xl, xh, yl, yh;
  axis_range(p, 0, &xl, &xh);
  axis_range(p, 1, &yl, &yh);
  fr.xlog = p->x.log && p->n_categories <= 0, fr.ylog = p->y.log;
  fr.x0 = fr.xlog ? log10(xl) : xl, fr.x1 = fr.xlog ? log10(xh) : xh;
  fr.y0 = fr.ylog ? log10(yl) : yl, fr.y1 = fr.ylog ? log10(yh) : yh;
  fr.l = x + L->ml, fr.r = x + L->panel_w - L->mr, fr.t = y + L->mt, fr.b = y + L->panel_h - L->mb;
  axis_ticks(f, &fr, 1, yl, yh, fr.ylog);
  if (p->n_categories > 0) category_axis(f, &fr, p, L->cat_label_h, L->rotate);
  else axis_ticks(f, &fr, 0, xl, xh, fr.xlog);
  panel_series(f, &fr, p, g, index);
  fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='none' stroke='#333'/>\n", fr.l, fr.t,
          fr.r - fr.l, fr.b - fr.t);
  if (p->title && *p->title) text(f, (fr.l + fr.r) / 2, fr.t - 7, 13, "middle", 0, p->title);
  if (p->x.label && (labels & 1)) text(f, (fr.l + fr.r) / 2, y + L->panel_h - 12, 13, "middle", 0, p->x.label);
  if (p->y.label && (labels & 2)) text(f, x + 16, (fr.t + fr.b) / 2, 13, "middle", -90, p->y.label);
}

static void draw_legend(FILE *f, const legend *g, double x, double y) {
  for (int i = 0; i < g->n; i++) {
    const plot_series *s = g->s[i];
    const char *color = series_color(s, i);
    double ly = y + 18 * i, mx = x + 13;
    if (s->style == PLOT_BARS || s->style == PLOT_BAND)
      fprintf(f, "<rect x='%.1f' y='%.1f' width='26' height='11' fill='%s'%s/>\n", x, ly - 5.5, color,
              s->style == PLOT_BAND ? " fill-opacity='0.25'" : "");
    else if (s->style == PLOT_RUG)
      fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='%s' stroke-width='1.5'/>\n", mx, mx, ly - 6,
              ly + 5, color);
    else if (s->style != PLOT_POINTS) {
      const char *dash = series_dash(s, i);
      fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' stroke='%s' stroke-width='%.1f'", x, x + 26, ly, ly,
              color, s->width > 0 ? s->width : 1.8);
      if (*dash) fprintf(f, " stroke-dasharray='%s'", dash);
      fputs("/>\n", f);
    }
    if (s->style == PLOT_LINE || s->style == PLOT_POINTS) marker(f, series_marker(s, i), mx, ly, 3.5, color, 1);
    text(f, x + 34, ly + 4, 12, "start", 0, s->name);
  }
}

int plot_write(const char *path, const plot_figure *fig) {
  legend g = {0};
  layout L;
  plan(fig, &g, &L);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
             "viewBox='0 0 %.0f %.0f' font-family='DejaVu Sans, Helvetica, Arial, sans-serif'>\n"
             "<rect width='100%%' height='100%%' fill='white'/>\n", L.width, L.height, L.width, L.height);
  if (fig->title) text(f, L.width / 2, 22, 15, "middle", 0, fig->title);
  int cols = fig->cols > 0 ? fig->cols : 1;
  for (int i = 0; i < fig->n_panels; i++)
    if (fig->panels[i].title || fig->panels[i].n_series) /* a panel of neither is a blank in the grid */
      draw_panel(f, &fig->panels[i], &L, (i % cols) * L.panel_w, L.top + (i / cols) * L.panel_h, &g, i,
               (i + cols >= fig->n_panels) | (i % cols == 0) << 1);
  draw_legend(f, &g, cols * L.panel_w + 4, L.top + L.mt + 10);
  double ny = L.height - 18.0 * L.note_lines;
  for (const char *s = fig->note; s && *s;) {
    const char *e = strchr(s, '\n');
    char line[512];
    snprintf(line, sizeof line, "%.*s", e ? (int)(e - s) : (int)strlen(s), s);
    text(f, 10, ny + 4, 11, "start", 0, line);
    ny += 18;
    s = e ? e + 1 : "";
  }
  fputs("</svg>\n", f);
  return fclose(f) == 0 ? 0 : -1;
}
