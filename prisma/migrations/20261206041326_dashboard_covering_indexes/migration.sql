-- CreateIndex
CREATE INDEX "Evaluation_sessionId_success_score_idx" ON "Evaluation"("sessionId", "success", "score");

-- CreateIndex
CREATE INDEX "Session_studyId_status_taskId_policyVersionId_reward_active_idx" ON "Session"("studyId", "status", "taskId", "policyVersionId", "reward", "activeMs", "startedAt", "endedAt", "id");

-- CreateIndex
CREATE INDEX "Session_policyVersionId_taskId_goldSourceId_guildId_id_idx" ON "Session"("policyVersionId", "taskId", "goldSourceId", "guildId", "id");
