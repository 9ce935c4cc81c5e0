//! A method the answer dropped and the task did not name comes back into
//! its class, and the summary says so.

use super::*;

const INVENTORY: &str = "class Inventory:\n    def __init__(self):\n        self.items = {}\n\n    def remove(self, name):\n        del self.items[name]\n\n    def total_value(self):\n        return sum(self.items.values())\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_method_is_put_back_and_the_summary_says_so() {
    // The whole file written back without `total_value`, as the 1.5B model
    // did on "make Inventory.remove raise KeyError".
    let program = "```python\nwrite_file('inv.py', 'class Inventory:\\n    def __init__(self):\\n        self.items = {}\\n\\n    def remove(self, name):\\n        if name not in self.items:\\n            raise KeyError(name)\\n        del self.items[name]\\n')\nsubmit_result('remove raises KeyError', ['inv.py'])\n```";
    let server = FakeServer::start(vec![Reply::OpenaiStream(program.into())]).await;
    let s = setup(&server.url);
    s.store
        .stable_put("inv.py", INVENTORY.as_bytes(), 0o644, 0, 1 << 20)
        .unwrap();
    let job = Job {
        spec: TaskSpec {
            task: "make Inventory.remove raise KeyError for a missing item".into(),
            file: Some("inv.py".into()),
            ..TaskSpec::default()
        },
        ..job()
    };
    let done = run_on(&s, &job).await.unwrap();
    let text = overlay_file(&s, "inv.py").unwrap();
    assert!(
        text.contains("raise KeyError(name)") && text.contains("    def total_value(self):"),
        "{text}"
    );
    assert!(
        done.summary.contains("Inventory.total_value"),
        "{}",
        done.summary
    );
}
