//! Reactions on comments.

use super::people::User;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReactionContent {
    #[serde(rename = "+1")]
    ThumbsUp,
    #[serde(rename = "-1")]
    ThumbsDown,
    Laugh,
    Confused,
    Heart,
    Hooray,
    Rocket,
    Eyes,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Reaction {
    pub id: u64,
    pub content: ReactionContent,
    #[serde(default)]
    pub user: Option<User>,
}
