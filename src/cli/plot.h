/* The command's plots: SVG figures of one or more panels (line, step, scatter and grouped-bar
 * series, shaded bands, a shared legend), with no plotting dependency. plot_axis.c places ticks;
 * plot_svg.c draws. */
#ifndef HT_CLI_PLOT_H
#define HT_CLI_PLOT_H

#include <stddef.h>

/* How a series is drawn. */
typedef enum plot_style {
  PLOT_LINE,   /* a polyline, markers every few points */
  PLOT_STEP,   /* a step line (best so far): horizontal, then vertical */
  PLOT_POINTS, /* a marker at each point */
  PLOT_RUG,    /* a mark on the x axis at each x (y unused): failures */
  PLOT_BARS,   /* one bar per category of a category panel (x unused) */
  PLOT_BAND    /* only the band lo..hi, no line */
} plot_style;

enum { PLOT_AUTO = -1, PLOT_GREY = 100, PLOT_NONE = -2 };

typedef struct plot_series {
  const char *name;       /* legend entry; NULL: none */
  plot_style style;
  int n;
  const double *x, *y;    /* [n] */
  const double *lo, *hi;  /* [n] a band drawn under every line (translucent), or NULL */
  int color, dash, marker; /* PLOT_AUTO: from the series' legend slot; PLOT_GREY; PLOT_NONE (marker) */
  double width;           /* line width, 0: 1.8 */
} plot_series;

typedef struct plot_axis {
  const char *label;      /* with its unit: "time (ms)" */
  int log;                /* decades */
  double lo, hi;          /* NAN: from the data, widened to ticks */
} plot_axis;

typedef struct plot_panel {
  const char *title;      /* NULL or "": none; NULL with no series: a blank slot of the grid */
  plot_axis x, y;
  int n_series;
  const plot_series *series;
  int n_categories;       /* > 0: a category x axis (bar charts) */
  const char *const *categories, *const *groups; /* [n_categories]; groups may be NULL */
} plot_panel;

typedef struct plot_figure {
  const char *title, *note; /* note: a line under the plot, or NULL */
  int n_panels, cols;       /* panels in a grid of cols columns */
  const plot_panel *panels;
  int width;                /* pixels, 0: chosen */
} plot_figure;

/* Writes the figure as SVG: 0, or -1 with errno. */
int plot_write(const char *path, const plot_figure *f);

/* Ticks (plot_axis.c): steps of 1, 2 or 5 x 10^k on linear axes, decades on log axes (with 2 and
 * 5 between them when the range is under two decades, every other decade past ten). */
void plot_nice_range(double *lo, double *hi, int log); /* widens to tick positions */
int plot_ticks(double lo, double hi, int log, double *ticks, int cap); /* count written */
int plot_minor_ticks(double lo, double hi, double *ticks, int cap);    /* log axes: 2..9 x 10^k */
/* A tick's label: as few digits as the axis's step needs ("0.25", "1000", "1e-05" as "1e-5"). */
void plot_tick_label(double v, const double *ticks, int n, int log, char *buf, size_t cap);

/* Time values in seconds scaled to a readable unit for the range: the factor and its name. */
double plot_time_unit(double max_s, const char **unit);

#endif
