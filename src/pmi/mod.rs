//! TEMPORARY singleton-only stand-in with the agreed API; replaced by the PMI-1 client.
use std::io;

pub struct Pmi {
    kvs: String,
    store: std::collections::HashMap<String, String>,
}

impl Pmi {
    pub fn init() -> io::Result<Pmi> {
        Ok(Pmi { kvs: format!("singleton-{}", std::process::id()), store: Default::default() })
    }
    pub fn rank(&self) -> usize {
        0
    }
    pub fn size(&self) -> usize {
        1
    }
    pub fn appnum(&self) -> i32 {
        0
    }
    pub fn is_singleton(&self) -> bool {
        true
    }
    pub fn kvsname(&self) -> &str {
        &self.kvs
    }
    pub fn put(&mut self, key: &str, value: &str) -> io::Result<()> {
        self.store.insert(key.into(), value.into());
        Ok(())
    }
    pub fn fence(&mut self) -> io::Result<()> {
        Ok(())
    }
    pub fn get(&mut self, key: &str) -> io::Result<Option<String>> {
        Ok(self.store.get(key).cloned())
    }
    pub fn node_ids(&mut self) -> io::Result<Vec<usize>> {
        Ok(vec![0])
    }
    pub fn abort(&mut self, code: i32, msg: &str) -> ! {
        eprintln!("{msg}");
        std::process::exit(code)
    }
    pub fn finalize(&mut self) -> io::Result<()> {
        Ok(())
    }
}
