//! Parse + align + metrics throughput on a generated 2,000-node Android dump
//! and a generated 1 MB HTML page; parse time of deeply nested HTML. Run with `cargo bench -p worldloom-obs`;
//! results are recorded in `docs/benchmarks.md`.

#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use worldloom_core::domain::Representation;
use worldloom_obs::metrics::tree_metrics;
use worldloom_obs::parse;

/// A uiautomator dump with `rows` list rows of 4 nodes each under a frame,
/// a title and a list (2,000 nodes for 499 rows). `checked_row` has its switch on.
fn android_dump(rows: usize, checked_row: usize) -> String {
    let mut s = String::from(
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">",
    );
    s.push_str("<node index=\"0\" text=\"\" resource-id=\"\" class=\"android.widget.FrameLayout\" package=\"com.example.list\" content-desc=\"\" checkable=\"false\" checked=\"false\" clickable=\"false\" enabled=\"true\" focusable=\"false\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" selected=\"false\" bounds=\"[0,0][1080,2400]\">");
    s.push_str("<node index=\"0\" text=\"Settings\" resource-id=\"com.example.list:id/toolbar_title\" class=\"android.widget.TextView\" package=\"com.example.list\" content-desc=\"\" checkable=\"false\" checked=\"false\" clickable=\"false\" enabled=\"true\" focusable=\"false\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" selected=\"false\" bounds=\"[0,0][1080,120]\" />");
    s.push_str("<node index=\"1\" text=\"\" resource-id=\"com.example.list:id/list\" class=\"androidx.recyclerview.widget.RecyclerView\" package=\"com.example.list\" content-desc=\"\" checkable=\"false\" checked=\"false\" clickable=\"false\" enabled=\"true\" focusable=\"true\" focused=\"false\" scrollable=\"true\" long-clickable=\"false\" password=\"false\" selected=\"false\" bounds=\"[0,0][1080,2400]\">");
    for r in 0..rows {
        let top = r * 120;
        let on = if r == checked_row { "true" } else { "false" };
        s.push_str(&format!("<node index=\"{r}\" text=\"\" resource-id=\"\" class=\"android.widget.LinearLayout\" package=\"com.example.list\" content-desc=\"\" checkable=\"false\" checked=\"false\" clickable=\"true\" enabled=\"true\" focusable=\"true\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" selected=\"false\" bounds=\"[0,{top}][1080,{}]\">", top + 120));
        s.push_str(&format!("<node index=\"0\" text=\"Setting number {r}\" resource-id=\"android:id/title\" class=\"android.widget.TextView\" package=\"com.example.list\" content-desc=\"\" checkable=\"false\" checked=\"false\" clickable=\"false\" enabled=\"true\" focusable=\"false\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" selected=\"false\" bounds=\"[40,{top}][800,{}]\" />", top + 60));
        s.push_str(&format!("<node index=\"1\" text=\"Summary of setting {r}\" resource-id=\"android:id/summary\" class=\"android.widget.TextView\" package=\"com.example.list\" content-desc=\"\" checkable=\"false\" checked=\"false\" clickable=\"false\" enabled=\"true\" focusable=\"false\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" selected=\"false\" bounds=\"[40,{}][800,{}]\" />", top + 60, top + 120));
        s.push_str(&format!("<node index=\"2\" text=\"\" resource-id=\"com.example.list:id/switch_{r}\" class=\"android.widget.Switch\" package=\"com.example.list\" content-desc=\"\" checkable=\"true\" checked=\"{on}\" clickable=\"true\" enabled=\"true\" focusable=\"true\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" selected=\"false\" bounds=\"[900,{top}][1040,{}]\" />", top + 60));
        s.push_str("</node>");
    }
    s.push_str("</node></node></hierarchy>");
    s
}

/// A BrowserGym-style pruned HTML page of at least `bytes` bytes: sections
/// of headings, paragraphs, links and form rows with `bid` attributes.
fn html_page(bytes: usize, checked_row: usize) -> String {
    let mut s = String::from(
        "<html><head bid=\"1\"><title bid=\"2\">Generated page</title></head><body bid=\"3\">",
    );
    let mut i = 0usize;
    while s.len() < bytes {
        let bid = 10 + i * 6;
        let checked = if i == checked_row { " checked" } else { "" };
        s.push_str(&format!(
            "<section bid=\"{bid}\" class=\"card\"><h2 bid=\"{}\">Section {i}</h2><p bid=\"{}\">Paragraph {i} with some ordinary words about the item and its price.</p><a bid=\"{}\" href=\"/item/{i}\">Open item {i}</a><label bid=\"{}\"><input bid=\"{}\" type=\"checkbox\"{checked}> Pick {i}</label></section>\n",
            bid + 1, bid + 2, bid + 3, bid + 4, bid + 5
        ));
        i += 1;
    }
    s.push_str("</body></html>");
    s
}

/// One benchmark group `name` over three pages in `representation` (the
/// real observation, a prediction and the previous observation): the parse
/// of the real one, the parse of all three and their comparison, and the
/// alignment and metrics alone.
fn bench_pages(
    c: &mut Criterion,
    name: &str,
    representation: Representation,
    [real, pred, prev]: [&str; 3],
    sample_size: Option<usize>,
) {
    let mut g = c.benchmark_group(name);
    if let Some(n) = sample_size {
        g.sample_size(n);
    }
    g.bench_function("parse", |b| {
        b.iter(|| parse(black_box(real), representation))
    });
    g.bench_function("parse_real_pred_prev_and_diff", |b| {
        b.iter(|| {
            let r = parse(black_box(real), representation).map(|p| p.tree);
            let p = parse(black_box(pred), representation).map(|p| p.tree);
            let q = parse(black_box(prev), representation).map(|p| p.tree);
            if let (Ok(r), Ok(p), Ok(q)) = (r, p, q) {
                black_box(tree_metrics(&r, &p, Some(&q)));
            }
        })
    });
    if let (Ok(r), Ok(p), Ok(q)) = (
        parse(real, representation),
        parse(pred, representation),
        parse(prev, representation),
    ) {
        println!(
            "{name}: {} bytes, {} nodes",
            real.len(),
            r.tree.real_node_count()
        );
        g.bench_function("align_and_metrics_only", |b| {
            b.iter(|| tree_metrics(&r.tree, &p.tree, Some(&q.tree)))
        });
    }
    g.finish();
}

fn bench(c: &mut Criterion) {
    let real = android_dump(499, 3);
    let nodes = parse(&real, Representation::AndroidXml)
        .map(|p| p.tree.real_node_count())
        .unwrap_or(0);
    assert_eq!(nodes, 2_000);
    let pred = android_dump(499, 4);
    let prev = android_dump(499, usize::MAX);
    bench_pages(
        c,
        "android_2000_nodes",
        Representation::AndroidXml,
        [&real, &pred, &prev],
        None,
    );

    let real = html_page(1 << 20, 3);
    let pred = html_page(1 << 20, 4);
    let prev = html_page(1 << 20, usize::MAX);
    bench_pages(
        c,
        "html_1mb",
        Representation::Html,
        [&real, &pred, &prev],
        Some(10),
    );
}

/// A page of `levels` nested `<tag>` elements around one word.
fn nested_page(tag: &str, levels: usize) -> String {
    let mut s = String::from("<html><body>");
    s.push_str(&format!("<{tag}>").repeat(levels));
    s.push_str("bottom");
    s.push_str(&format!("</{tag}>").repeat(levels));
    s.push_str("</body></html>");
    s
}

/// Deeply nested HTML: parsing stays linear in the depth (the tree keeps
/// `MAX_HTML_DEPTH` levels). The uncapped html5ever parse of the same page
/// is measured at 10,000 levels for comparison (it is quadratic for `<div>`).
fn bench_nested(c: &mut Criterion) {
    let mut g = c.benchmark_group("html_nested");
    g.sample_size(10);
    for levels in [10_000usize, 40_000, 100_000] {
        for tag in ["div", "span"] {
            let page = nested_page(tag, levels);
            g.bench_function(format!("parse_{levels}_{tag}"), |b| {
                b.iter(|| parse(black_box(&page), Representation::Html))
            });
        }
    }
    for tag in ["div", "span"] {
        let page = nested_page(tag, 10_000);
        g.bench_function(format!("html5ever_uncapped_10000_{tag}"), |b| {
            b.iter(|| scraper::Html::parse_document(black_box(&page)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench, bench_nested);
criterion_main!(benches);
