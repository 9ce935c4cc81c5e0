//! Tools that look beyond the project: the machine's load, memory, disk
//! and busiest processes (`system_stats`) and a web search through a
//! SearXNG-compatible endpoint (`web_search`).

use std::path::Path;

use serde_json::{json, Value as Json};
use tokio_util::sync::CancellationToken;

/// Processes listed in each of `system_stats`' top lists.
const TOP: usize = 5;

/// CPUs, load averages, memory and uptime (from `/proc` where there is
/// one), the disk holding `root`, and the processes using the most CPU and
/// memory (from `ps`, on Linux and macOS alike).
pub fn system_stats(root: &Path) -> Json {
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
    if let Ok(v) = rustix::fs::statvfs(root) {
        let unit = v.f_frsize.max(1);
        let (total, free) = (v.f_blocks * unit, v.f_bavail * unit);
        stats["disk"] = json!({
            "path": root.display().to_string(),
            "total_mb": total >> 20,
            "available_mb": free >> 20,
            "used_percent": if total == 0 { 0.0 } else { ((total - free) as f64 * 1000.0 / total as f64).round() / 10.0 },
        });
    }
    let mut procs = processes();
    if !procs.is_empty() {
        let list = |procs: &[Process]| -> Json {
            procs
                .iter()
                .take(TOP)
                .map(|p| json!({"pid": p.pid, "name": p.name, "cpu_percent": p.cpu, "memory_mb": p.rss_kb / 1024}))
                .collect()
        };
        procs.sort_by(|a, b| b.cpu.total_cmp(&a.cpu));
        stats["top_cpu"] = list(&procs);
        procs.sort_by_key(|p| std::cmp::Reverse(p.rss_kb));
        stats["top_memory"] = list(&procs);
    }
    stats
}

/// Clock ticks per second of `/proc/*/stat` times (`USER_HZ`, 100 on
/// every Linux that matters).
const TICKS: f64 = 100.0;

/// The processes of `/proc`: their CPU use over their life, as `ps`
/// reports it, and their resident memory.
fn proc_processes() -> Vec<Process> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    let uptime = std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|u| u.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    dir.filter_map(Result::ok)
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // `pid (name) state …`: the name may hold spaces and parens.
            let (head, rest) = stat.rsplit_once(')')?;
            let name = head.split_once('(')?.1.to_owned();
            let fields: Vec<&str> = rest.split_whitespace().collect();
            // Fields 14, 15 and 22 of the line, counted after the name.
            let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
            let (utime, stime, start) = (ticks(11)?, ticks(12)?, ticks(19)?);
            let alive = uptime - start / TICKS;
            let cpu = if alive > 0.0 {
                ((utime + stime) / TICKS / alive * 1000.0).round() / 10.0
            } else {
                0.0
            };
            let rss_kb = std::fs::read_to_string(e.path().join("status"))
                .ok()?
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0);
            Some(Process {
                pid,
                name,
                cpu,
                rss_kb,
            })
        })
        .collect()
}

struct Process {
    pid: u32,
    name: String,
    cpu: f64,
    rss_kb: u64,
}

/// Every process: from `/proc` where there is one (no `ps` needed),
/// else as `ps` lists them (none where there is neither).
fn processes() -> Vec<Process> {
    let from_proc = proc_processes();
    if !from_proc.is_empty() {
        return from_proc;
    }
    let Ok(out) = std::process::Command::new("ps")
        .args([
            "-A", "-o", "pid=", "-o", "%cpu=", "-o", "rss=", "-o", "comm=",
        ])
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return vec![];
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            // The name last: it may hold spaces (a path on macOS).
            let mut words = line.split_whitespace();
            let pid = words.next()?.parse().ok()?;
            let cpu = words.next()?.parse().ok()?;
            let rss_kb = words.next()?.parse().ok()?;
            let name = words.collect::<Vec<_>>().join(" ");
            let name = Path::new(&name)
                .file_name()
                .map_or(name.clone(), |n| n.to_string_lossy().into_owned());
            Some(Process {
                pid,
                name,
                cpu,
                rss_kb,
            })
        })
        .collect()
}

/// Why a search failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("the search endpoint {0} cannot be reached: {1}")]
    Unreachable(String, String),
    #[error("the search endpoint answered HTTP {0}")]
    Status(u16),
    #[error("the search endpoint answered with a redirect to {0}: not followed (it could lead to a host capabilities.hosts does not allow); set tools.web_search_url to the final URL")]
    Redirect(String),
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
        if let Some(to) = crate::http::redirect_target(&resp) {
            return Err(SearchError::Redirect(to));
        }
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

#[cfg(test)]
mod tests {
    #[test]
    fn system_stats_tell_the_projects_disk_and_the_busiest_processes() {
        let dir = tempfile::tempdir().unwrap();
        let stats = super::system_stats(dir.path());
        assert!(stats["disk"]["total_mb"].as_u64().unwrap() > 0, "{stats}");
        assert!(stats["disk"]["available_mb"].is_u64(), "{stats}");
        let used = stats["disk"]["used_percent"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&used), "{stats}");
        // This very test is a process with memory: the lists are there.
        let top = stats["top_memory"].as_array().unwrap();
        assert!(!top.is_empty() && top.len() <= super::TOP, "{stats}");
        assert!(
            top[0]["pid"].is_u64() && top[0]["name"].is_string(),
            "{stats}"
        );
        let mems: Vec<u64> = top
            .iter()
            .map(|p| p["memory_mb"].as_u64().unwrap())
            .collect();
        assert!(mems.windows(2).all(|w| w[0] >= w[1]), "sorted: {mems:?}");
        assert!(
            stats["top_cpu"].as_array().is_some_and(|a| !a.is_empty()),
            "{stats}"
        );
    }
}
