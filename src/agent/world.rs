//! Tools that look beyond the project: the machine's load and memory
//! (`system_stats`) and a web search through a SearXNG-compatible endpoint
//! (`web_search`).

use serde_json::{json, Value as Json};
use tokio_util::sync::CancellationToken;

/// CPUs, load averages, memory and uptime, from `/proc` where there is one.
pub fn system_stats() -> Json {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut stats = json!({"os": std::env::consts::OS, "cpus": cpus});
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        let parts: Vec<f64> = load
            .split_whitespace()
            .take(3)
            .filter_map(|x| x.parse().ok())
            .collect();
        if let [one, five, fifteen] = parts[..] {
            stats["load_1m"] = json!(one);
            stats["load_5m"] = json!(five);
            stats["load_15m"] = json!(fifteen);
        }
    }
    if let Ok(mem) = std::fs::read_to_string("/proc/meminfo") {
        for line in mem.lines() {
            let mut words = line.split_whitespace();
            let (Some(key), Some(kb)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(kb) = kb.parse::<u64>() else { continue };
            match key {
                "MemTotal:" => stats["memory_total_mb"] = json!(kb / 1024),
                "MemAvailable:" => stats["memory_available_mb"] = json!(kb / 1024),
                _ => {}
            }
        }
    }
    if let Some(up) = std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|u| u.split_whitespace().next()?.parse::<f64>().ok())
    {
        stats["uptime_s"] = json!(up as u64);
    }
    stats
}

/// Why a search failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("the search endpoint {0} cannot be reached: {1}")]
    Unreachable(String, String),
    #[error("the search endpoint answered HTTP {0}")]
    Status(u16),
    #[error("the search endpoint's answer is not SearXNG JSON: {0}")]
    BadReply(String),
    #[error("the search endpoint did not answer within 15 s")]
    Timeout,
    #[error("cancelled")]
    Cancelled,
}

/// Asks `{base}/search?q=…&format=json`; the first `limit` results as
/// text, one block per result (title, URL, snippet).
pub async fn search(
    http: &reqwest::Client,
    base: &reqwest::Url,
    query: &str,
    limit: usize,
    cancel: &CancellationToken,
) -> Result<String, SearchError> {
    let mut url = base.clone();
    url.set_path(&format!("{}/search", base.path().trim_end_matches('/')));
    url.query_pairs_mut()
        .append_pair("q", query)
        .append_pair("format", "json");
    let ask = async {
        let resp = http
            .get(url.clone())
            .send()
            .await
            .map_err(|e| SearchError::Unreachable(base.to_string(), e.to_string()))?;
        if !resp.status().is_success() {
            return Err(SearchError::Status(resp.status().as_u16()));
        }
        resp.json::<Json>()
            .await
            .map_err(|e| SearchError::BadReply(e.to_string()))
    };
    let answer = tokio::select! {
        _ = cancel.cancelled() => return Err(SearchError::Cancelled),
        r = tokio::time::timeout(std::time::Duration::from_secs(15), ask) => r.map_err(|_| SearchError::Timeout)??,
    };
    let results = answer["results"]
        .as_array()
        .ok_or_else(|| SearchError::BadReply("no `results` list".into()))?;
    if results.is_empty() {
        return Ok(format!("No results for {query:?}."));
    }
    Ok(results
        .iter()
        .take(limit.max(1))
        .map(|r| {
            format!(
                "{}\n{}\n{}",
                r["title"].as_str().unwrap_or("(untitled)"),
                r["url"].as_str().unwrap_or(""),
                r["content"].as_str().unwrap_or("").trim()
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n"))
}
