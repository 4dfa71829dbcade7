//! A local change as a review's input: `--git BASE..HEAD` or `--diff FILE|-`.
//!
//! Nothing here touches GitHub. The change comes from git (or a diff file), and the
//! repository's own `.parley.yml` and guideline files are read from the base, as a PR
//! review reads them from the base branch: the change under review cannot loosen the
//! rules it is judged by.

use parley_core::config::{self, ConfigWarning, RepoConfig};
use parley_core::ports::github::{ChangedFile, FileStatus};
use parley_core::repo::{Attributes, Guideline, guideline_paths, instructions_for};
use parley_core::review::diff::{self, DiffError};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error("git {args}: {message}")]
    Git { args: String, message: String },
    #[error("the diff does not parse ({0}); give a unified diff as `git diff` prints it")]
    BadDiff(DiffError),
    #[error("cannot read the diff from {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("the diff changes no file Parley can review (no text hunks)")]
    Empty,
}

/// A change to review, with the rules of its base.
pub struct LocalChange {
    /// `owner/name` from the `origin` remote, else the directory's name: where local
    /// learnings are kept.
    pub repo: String,
    pub owner: String,
    /// The working tree's root: the code a review reads beyond the diff.
    pub root: std::path::PathBuf,
    pub title: String,
    pub base: String,
    pub head: String,
    pub files: Vec<ChangedFile>,
    pub config: RepoConfig,
    pub warnings: Vec<ConfigWarning>,
    pub guidelines: Vec<Guideline>,
    /// The base's `.gitattributes`, read where `.parley.yml` is.
    pub attributes: Attributes,
}

impl LocalChange {
    /// Where its learnings are kept: by name, since a working tree has no GitHub ids (a
    /// store shared with `parley serve` keeps that repository's under its id instead).
    pub fn tenant(&self) -> parley_core::tenancy::Tenant {
        parley_core::tenancy::Tenant {
            repo: self.repo.clone(),
            org: parley_core::learning::record::org_partition(&self.owner),
        }
    }
}

/// `git diff BASE HEAD` (or, with no range, the merge base with the default branch up to
/// the working tree), in the repository at `dir`.
pub fn from_git(dir: &Path, range: Option<&str>) -> Result<LocalChange, LocalError> {
    let git = Git::at(dir)?;
    let (base, head, diff_args) = match range {
        Some(range) => {
            let (base, head) = range.split_once("..").ok_or_else(|| LocalError::Git {
                args: format!("--git {range}"),
                message: "expected BASE..HEAD, e.g. main..HEAD".into(),
            })?;
            let head = if head.is_empty() { "HEAD" } else { head };
            let base = git.rev_parse(base)?;
            let head_sha = git.rev_parse(head)?;
            (base.clone(), head_sha.clone(), vec![base, head_sha])
        }
        None => {
            let branch = git.default_branch()?;
            let base = git
                .run(&["merge-base", &branch, "HEAD"])?
                .trim()
                .to_string();
            // Against the working tree: what the developer is about to commit, too.
            (base.clone(), "working tree".to_string(), vec![base])
        }
    };
    let mut args = vec!["diff", "--no-color", "--no-ext-diff", "-M"];
    args.extend(diff_args.iter().map(String::as_str));
    let text = git.run(&args)?;
    let files = files_from_diff(&text)?;
    let (config, warnings) = config::parse(&git.show(&base, config::FILE_NAME).unwrap_or_default());
    let touched: Vec<String> = files.iter().map(|f| f.filename.clone()).collect();
    let guidelines = guideline_paths(&touched)
        .into_iter()
        .filter_map(|path| {
            let text = git.show(&base, &path)?;
            Some(Guideline::from_text(path, &text))
        })
        .chain(instructions_for(&config.review.instructions, &touched))
        .collect();
    let attributes = read_attributes(&touched, |path| git.show(&base, path));
    let (owner, repo) = git.repo_name();
    let title = git
        .run(&[
            "log",
            "-1",
            "--format=%s",
            if head == "working tree" {
                "HEAD"
            } else {
                &head
            },
        ])
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    Ok(LocalChange {
        repo,
        owner,
        root: dir.to_path_buf(),
        title,
        base,
        head,
        files,
        config,
        warnings,
        guidelines,
        attributes,
    })
}

/// A unified diff from a file, or stdin with `-`. Inside a git repository the rules come
/// from the base, as for `--git`: the merge base of the default branch and HEAD (a diff of
/// a branch that edits `.parley.yml` must not be judged by its own edit). Outside one, or
/// with no default branch to find the base by, the defaults apply and a warning says why.
pub fn from_diff(source: &str, dir: &Path) -> Result<LocalChange, LocalError> {
    let text = if source == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|source| LocalError::Read {
            path: "stdin".into(),
            source,
        })?
    } else {
        std::fs::read_to_string(source).map_err(|e| LocalError::Read {
            path: source.to_string(),
            source: e,
        })?
    };
    let files = files_from_diff(&text)?;
    let git = Git::at(dir).ok();
    let base = git.as_ref().map(Git::base_of_head);
    let read = |path: &str| match (&git, &base) {
        (Some(git), Some(Ok(base))) => git.show(base, path),
        _ => None,
    };
    let (config, mut warnings) = config::parse(&read(config::FILE_NAME).unwrap_or_default());
    if let Some(Err(why)) = &base {
        warnings.push(ConfigWarning {
            key: config::FILE_NAME.to_string(),
            message: format!("was not read: no base to read it from ({why}); using defaults"),
        });
    }
    let touched: Vec<String> = files.iter().map(|f| f.filename.clone()).collect();
    let guidelines = guideline_paths(&touched)
        .into_iter()
        .filter_map(|path| Some(Guideline::from_text(path.clone(), &read(&path)?)))
        .chain(instructions_for(&config.review.instructions, &touched))
        .collect();
    let attributes = read_attributes(&touched, read);
    let (owner, repo) = git
        .as_ref()
        .map(Git::repo_name)
        .unwrap_or_else(|| ("local".into(), "local/diff".into()));
    Ok(LocalChange {
        repo,
        owner,
        root: dir.to_path_buf(),
        title: String::new(),
        base: "base".into(),
        head: "diff".into(),
        files,
        config,
        warnings,
        guidelines,
        attributes,
    })
}

/// The base's `.gitattributes` files that may mark `touched` files, as the worker reads
/// them ([`Attributes::files_for`]).
fn read_attributes(touched: &[String], read: impl Fn(&str) -> Option<String>) -> Attributes {
    Attributes::files_for(touched)
        .into_iter()
        .filter_map(|(dir, path)| Some(Attributes::parse_in(&dir, &read(&path)?)))
        .fold(Attributes::default(), Attributes::then)
}

/// The files of a unified diff in the shape GitHub lists a PR's files in.
pub fn files_from_diff(text: &str) -> Result<Vec<ChangedFile>, LocalError> {
    let parsed = diff::parse_unified(text).map_err(LocalError::BadDiff)?;
    let files: Vec<ChangedFile> = parsed
        .into_iter()
        .filter_map(|file| {
            let path = file.path()?.to_string();
            let status = if file.is_added() {
                FileStatus::Added
            } else if file.is_deleted() {
                FileStatus::Removed
            } else if file.is_rename {
                FileStatus::Renamed
            } else {
                FileStatus::Modified
            };
            let patch =
                (!file.is_binary && !file.patch.hunks.is_empty()).then(|| file.patch.to_text());
            Some(ChangedFile {
                filename: path,
                status,
                additions: file.patch.additions() as u64,
                deletions: file.patch.deletions() as u64,
                changes: (file.patch.additions() + file.patch.deletions()) as u64,
                patch,
                previous_filename: file.is_rename.then(|| file.old_path.clone()).flatten(),
                sha: None,
            })
        })
        .collect();
    if files.iter().all(|f| f.patch.is_none()) {
        return Err(LocalError::Empty);
    }
    Ok(files)
}

struct Git {
    dir: PathBuf,
}

impl Git {
    fn at(dir: &Path) -> Result<Self, LocalError> {
        let git = Git {
            dir: dir.to_path_buf(),
        };
        let top = git.run(&["rev-parse", "--show-toplevel"])?;
        Ok(Git {
            dir: PathBuf::from(top.trim()),
        })
    }

    fn run(&self, args: &[&str]) -> Result<String, LocalError> {
        let failed = |message: String| LocalError::Git {
            args: args.join(" "),
            message,
        };
        let output = Command::new("git")
            .args(args)
            .current_dir(&self.dir)
            .output()
            .map_err(|e| failed(format!("cannot run git ({e}); is git installed?")))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(failed(
                stderr.lines().next().unwrap_or("failed").to_string(),
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    fn rev_parse(&self, rev: &str) -> Result<String, LocalError> {
        Ok(self
            .run(&["rev-parse", "--verify", &format!("{rev}^{{commit}}")])?
            .trim()
            .to_string())
    }

    /// The file at `rev`, if it exists there and is text.
    fn show(&self, rev: &str, path: &str) -> Option<String> {
        self.run(&["show", &format!("{rev}:{path}")]).ok()
    }

    /// `origin`'s default branch, else `main` or `master`, whichever exists.
    fn default_branch(&self) -> Result<String, LocalError> {
        if let Ok(head) = self.run(&["symbolic-ref", "--short", "refs/remotes/origin/HEAD"]) {
            return Ok(head.trim().to_string());
        }
        for candidate in ["main", "master", "origin/main", "origin/master"] {
            if self.rev_parse(candidate).is_ok() {
                return Ok(candidate.to_string());
            }
        }
        Err(LocalError::Git {
            args: "--git".into(),
            message: "no default branch (main, master or origin/HEAD) to diff against; \
                      give a range: --git BASE..HEAD"
                .into(),
        })
    }

    /// The commit a change on HEAD is judged from: where HEAD left the default branch.
    fn base_of_head(&self) -> Result<String, LocalError> {
        let branch = self.default_branch()?;
        Ok(self
            .run(&["merge-base", &branch, "HEAD"])?
            .trim()
            .to_string())
    }

    /// `(owner, owner/name)` from the origin remote's URL, else the directory name.
    fn repo_name(&self) -> (String, String) {
        let from_remote = self
            .run(&["remote", "get-url", "origin"])
            .ok()
            .and_then(|url| {
                let url = url.trim().trim_end_matches(".git").to_string();
                let mut parts = url.rsplit(['/', ':']);
                let name = parts.next()?.to_string();
                let owner = parts.next()?.to_string();
                (!owner.is_empty() && !name.is_empty()).then_some((owner, name))
            });
        let (owner, name) = from_remote.unwrap_or_else(|| {
            let name = self
                .dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "local".into());
            ("local".into(), name)
        });
        (owner.clone(), format!("{owner}/{name}"))
    }
}
