//! A real headless Chromium, driven through `chromedriver` (Debian's
//! `chromium` and `chromium-driver`) with fantoccini. One browser at a time
//! (the machine has 2 cores); screenshots go to `target/ui-screenshots/`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| PathBuf::from(d).join(name))
        .find(|p| p.is_file())
}

/// Chromium and its driver, or why the browser tests cannot run. In CI
/// (`OPENPROGRAM_UI_REQUIRED=1`, set by `.ci/run`) a missing browser fails
/// the test instead.
pub fn tools() -> Option<(PathBuf, PathBuf)> {
    let chromium = which("chromium").or_else(|| which("chromium-browser"));
    let driver = which("chromedriver");
    match (chromium, driver) {
        (Some(c), Some(d)) => Some((c, d)),
        _ => {
            let why = "Chromium or chromedriver is not installed (Debian packages `chromium` and `chromium-driver`)";
            if std::env::var_os("OPENPROGRAM_UI_REQUIRED").is_some() {
                panic!("{why}, and OPENPROGRAM_UI_REQUIRED is set");
            }
            // Past the test harness's capture (which hides what a passing
            // test prints), so the run's output names every skipped test.
            let test = std::thread::current()
                .name()
                .unwrap_or("a browser test")
                .to_string();
            let _ = writeln!(std::io::stderr(), "SKIPPED: {test}: {why}");
            None
        }
    }
}

pub struct Browser {
    pub client: Client,
    driver: Child,
    _guard: std::sync::MutexGuard<'static, ()>,
    pub rt: tokio::runtime::Runtime,
}

impl Browser {
    /// A browser at `width` × `height`, or `None` (skipped) without one.
    pub fn start(width: u32, height: u32) -> Option<Browser> {
        Self::start_with(width, height, &[])
    }

    /// With extra Chromium flags (e.g. `--force-dark-mode`).
    pub fn start_with(width: u32, height: u32, flags: &[&str]) -> Option<Browser> {
        let (chromium, driver_bin) = tools()?;
        let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let port = crate::ports::free_port();
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let profile = tempfile::tempdir().expect("profile dir").keep();
        let mut args: Vec<String> = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(format!("--window-size={width},{height}"));
        args.push(format!("--user-data-dir={}", profile.display()));
        args.extend(flags.iter().map(|f| f.to_string()));
        let caps: serde_json::Map<String, Value> = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args}
        })
        .as_object()
        .cloned()
        .expect("object");
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let client = loop {
            let attempt = rt.block_on(async {
                ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                    .capabilities(caps.clone())
                    .connect(&url)
                    .await
            });
            match attempt {
                Ok(c) => break c,
                Err(e) if started.elapsed() < Duration::from_secs(20) => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(150));
                }
                Err(e) => panic!("chromedriver did not start a browser: {e}"),
            }
        };
        Some(Browser {
            client,
            driver,
            _guard: guard,
            rt,
        })
    }

    pub fn goto(&self, url: &str) {
        self.rt.block_on(self.client.goto(url)).expect("goto");
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page.
    pub fn js(&self, script: &str, args: Vec<Value>) -> Value {
        self.rt
            .block_on(self.client.execute(script, args))
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Waits (up to 15 s) until `script` returns something truthy; returns it.
    pub fn wait_js(&self, script: &str, what: &str) -> Value {
        let started = Instant::now();
        loop {
            let v = self.js(script, vec![]);
            let truthy =
                !(v.is_null() || v == Value::Bool(false) || v == json!(0) || v == json!(""));
            if truthy {
                return v;
            }
            if started.elapsed() > Duration::from_secs(15) {
                self.screenshot(&format!("timeout-{}", what.replace(' ', "-")));
                panic!("timed out waiting for {what}; last value {v}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn click(&self, css: &str) {
        self.rt
            .block_on(async {
                let e = self.client.wait().for_element(Locator::Css(css)).await?;
                e.click().await
            })
            .unwrap_or_else(|e| panic!("click {css}: {e}"));
    }

    pub fn type_into(&self, css: &str, text: &str) {
        self.rt
            .block_on(async {
                let e = self.client.wait().for_element(Locator::Css(css)).await?;
                e.clear().await?;
                e.send_keys(text).await
            })
            .unwrap_or_else(|e| panic!("type into {css}: {e}"));
    }

    pub fn text(&self, css: &str) -> String {
        self.js(
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;",
            vec![json!(css)],
        )
        .as_str()
        .unwrap_or("")
        .to_string()
    }

    /// Saves a PNG under `target/ui-screenshots/<name>.png`.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/ui-screenshots");
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        let png = self
            .rt
            .block_on(self.client.screenshot())
            .expect("screenshot");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write screenshot");
        path
    }

    /// A second tab on the same browser; returns (first, second) handles.
    pub fn second_tab(
        &self,
        url: &str,
    ) -> (fantoccini::wd::WindowHandle, fantoccini::wd::WindowHandle) {
        self.rt
            .block_on(async {
                let first = self.client.window().await?;
                let w = self.client.new_window(true).await?;
                self.client.switch_to_window(w.handle.clone()).await?;
                self.client.goto(url).await?;
                Ok::<_, fantoccini::error::CmdError>((first, w.handle))
            })
            .expect("second tab")
    }

    pub fn switch(&self, w: &fantoccini::wd::WindowHandle) {
        self.rt
            .block_on(self.client.switch_to_window(w.clone()))
            .expect("switch tab");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let client = self.client.clone();
        let _ = self.rt.block_on(client.close());
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
